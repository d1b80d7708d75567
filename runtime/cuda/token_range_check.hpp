// TokenRangeCheck: the embedding kernels' promise that a token outside [0, v) is refused before
// anything is read or written, kept on the GPU. A small kernel records the first bad token in one
// device word and one 8-byte copy brings it to pinned host memory. check() then waits for it and
// throws: the one host synchronization of an embedding forward. check_on_stream() waits for nothing:
// a host function queued behind the copy throws, failing the stream at that place (so the next
// synchronize rethrows it), and the kernels queued after read the device word and write nothing
// when it holds a bad token — an embedding backward, whose tokens the forward has just checked, so
// it costs no second synchronization. Not for concurrent use from several threads (one slot).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tessera {

class Stream;

class TokenRangeCheck {
 public:
  explicit TokenRangeCheck(int device);  // one device word and one pinned host word
  ~TokenRangeCheck();                    // never throws
  TokenRangeCheck(const TokenRangeCheck&) = delete;
  TokenRangeCheck& operator=(const TokenRangeCheck&) = delete;

  // tokens (n) i32 on the device; waits for `stream`. Throws std::out_of_range naming `where`, the
  // first bad token's index and value, and the table's range.
  void check(const std::int32_t* tokens, std::int64_t n, std::int64_t v, cudaStream_t stream, const char* where) const;
  // The same queued on `stream` (`host_calls` is the Stream object over it); returns the device word
  // for the kernels that follow (launch_embedding_backward's refuse_if_bad). The std::out_of_range
  // comes from the stream's next synchronize.
  const unsigned long long* check_on_stream(const std::int32_t* tokens, std::int64_t n, std::int64_t v,
                                            cudaStream_t stream, Stream& host_calls, const char* where) const;

 private:
  int device_ = 0;
  unsigned long long* device_slot_ = nullptr;
  unsigned long long* host_slot_ = nullptr;
};

}  // namespace tessera
