// ParamSegment: one parameter's run inside a range of a flat parameter buffer — elements
// [begin, begin + count) of the range — and whether weight decay applies to it. Optimizer states
// and their kernels update a range segment by segment; elements of no segment (padding) are
// never updated.
#pragma once

#include <cstdint>

namespace tessera {

struct ParamSegment {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  bool decay = false;
};

}  // namespace tessera
