// attention_head_size: the head size hs = c / nh of the attention kernels' (b,t,3c) qkv, checked
// the same way by every backend: nh must be positive and divide c, else std::invalid_argument
// naming the op (`where`) and both numbers.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tessera {

inline std::int64_t attention_head_size(std::int64_t c, std::int64_t nh, const char* where) {
  if (nh <= 0 || c % nh != 0) {
    throw std::invalid_argument(std::string(where) + ": channels " + std::to_string(c) +
                                " are not divisible by the number of heads " + std::to_string(nh) +
                                "; choose n_head so that n_embd % n_head == 0");
  }
  return c / nh;
}

}  // namespace tessera
