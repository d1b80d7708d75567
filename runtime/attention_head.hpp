// attention_head_size: the head size hs = c / nh of the attention kernels' (b,t,3c) qkv, checked
// the same way by every backend: nh must be positive and divide c, else std::invalid_argument
// naming the op (`where`) and both numbers.
#pragma once

#include <cstdint>

namespace tessera {

std::int64_t attention_head_size(std::int64_t c, std::int64_t nh, const char* where);

}  // namespace tessera
