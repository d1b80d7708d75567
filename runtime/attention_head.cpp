// attention_head_size, out of line: the per-level CPU kernels call it and build no message themselves.
#include "tessera/runtime/attention_head.hpp"

#include <stdexcept>
#include <string>

namespace tessera {

std::int64_t attention_head_size(std::int64_t c, std::int64_t nh, const char* where) {
  if (nh <= 0 || c % nh != 0) {
    throw std::invalid_argument(std::string(where) + ": channels " + std::to_string(c) +
                                " are not divisible by the number of heads " + std::to_string(nh) +
                                "; choose n_head so that n_embd % n_head == 0");
  }
  return c / nh;
}

}  // namespace tessera
