// Layering probe (tests/layers/layering_test.cmake): compiled with the runtime layer's include path,
// a header of a layer below it (core) must be found.
#include "tessera/core/work.hpp"

namespace tessera {
const void* layering_probe_down = &typeid(Work);
}  // namespace tessera
