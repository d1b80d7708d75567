// TokenRangeCheck: find the first bad token on the device, copy it back, throw on the host.
#include "tessera/runtime/cuda/token_range_check.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/stream.hpp"

namespace tessera {
namespace {
constexpr unsigned long long kNoBadToken = ~0ull;
}

TokenRangeCheck::TokenRangeCheck(int device) : device_(device) {
  select_cuda_device(device);
  TESSERA_CUDA_CHECK(cudaMalloc(&device_slot_, sizeof *device_slot_));
  if (const cudaError_t error = cudaMallocHost(&host_slot_, sizeof *host_slot_); error != cudaSuccess) {
    cudaFree(device_slot_);
    TESSERA_CUDA_CHECK(error);
  }
}

TokenRangeCheck::~TokenRangeCheck() {
  select_cuda_device_noexcept(device_);
  cudaFreeHost(host_slot_);
  cudaFree(device_slot_);
}

namespace {

void check_count(std::int64_t n, const char* where) {
  if (n > 0xffffffffll) {
    throw std::invalid_argument(std::string(where) + ": " + std::to_string(n) +
                                " tokens in one call; the token check handles at most 2^32 - 1");
  }
}

// Throws std::out_of_range naming the bad token `found` holds, if any.
void throw_if_bad(unsigned long long found, std::int64_t v, const char* where) {
  if (found == kNoBadToken) return;
  const auto index = static_cast<std::int64_t>(found >> 32);
  const auto token = static_cast<std::int32_t>(static_cast<std::uint32_t>(found & 0xffffffffull));
  throw std::out_of_range(std::string(where) + ": token[" + std::to_string(index) + "] = " + std::to_string(token) +
                          " is outside the embedding table [0, " + std::to_string(v) +
                          "); check the data's token ids against the model's vocab size");
}

}  // namespace

void TokenRangeCheck::check(const std::int32_t* tokens, std::int64_t n, std::int64_t v, cudaStream_t stream,
                            const char* where) const {
  if (n == 0) return;
  check_count(n, where);
  TESSERA_CUDA_CHECK(cudaMemsetAsync(device_slot_, 0xff, sizeof *device_slot_, stream));
  detail::launch_find_bad_token(tokens, n, v, device_slot_, stream);
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(host_slot_, device_slot_, sizeof *host_slot_, cudaMemcpyDeviceToHost, stream));
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream));  // the one host synchronization
  throw_if_bad(*host_slot_, v, where);
}

const unsigned long long* TokenRangeCheck::check_on_stream(const std::int32_t* tokens, std::int64_t n, std::int64_t v,
                                                           cudaStream_t stream, Stream& host_calls,
                                                           const char* where) const {
  check_count(n, where);
  TESSERA_CUDA_CHECK(cudaMemsetAsync(device_slot_, 0xff, sizeof *device_slot_, stream));
  if (n == 0) return device_slot_;
  detail::launch_find_bad_token(tokens, n, v, device_slot_, stream);
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(host_slot_, device_slot_, sizeof *host_slot_, cudaMemcpyDeviceToHost, stream));
  // Runs in stream order, before any later copy into the slot.
  host_calls.launch_host_function([slot = host_slot_, v, where] { throw_if_bad(*slot, v, where); });
  return device_slot_;
}

}  // namespace tessera
