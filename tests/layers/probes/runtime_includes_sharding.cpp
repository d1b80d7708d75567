// Layering probe (tests/layers/layering_test.cmake): compiled with the runtime layer's include path,
// a header of a layer above it (sharding) must not be found — the build refuses the upward include.
#include "tessera/sharding/sharded_engine.hpp"

namespace tessera {
const void* layering_probe_up = &typeid(ShardedEngine);
}  // namespace tessera
