// TokenRangeCheck: the embedding kernels' promise that a token outside [0, v) throws before
// anything is read or written, kept on the GPU. A small kernel records the first bad token in one
// device word, one 8-byte copy brings it to pinned host memory, and the host waits for it: the one
// host synchronization of the embedding forward and backward. Not for concurrent use from several
// threads (one slot).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tessera {

class TokenRangeCheck {
 public:
  explicit TokenRangeCheck(int device);  // one device word and one pinned host word
  ~TokenRangeCheck();                    // never throws
  TokenRangeCheck(const TokenRangeCheck&) = delete;
  TokenRangeCheck& operator=(const TokenRangeCheck&) = delete;

  // tokens (n) i32 on the device; waits for `stream`. Throws std::out_of_range naming `where`, the
  // first bad token's index and value, and the table's range.
  void check(const std::int32_t* tokens, std::int64_t n, std::int64_t v, cudaStream_t stream, const char* where) const;

 private:
  int device_ = 0;
  unsigned long long* device_slot_ = nullptr;
  unsigned long long* host_slot_ = nullptr;
};

}  // namespace tessera
