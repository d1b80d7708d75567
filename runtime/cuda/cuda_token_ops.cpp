// CudaKernels' ops that index by token id or target, f32 and bf16: the embedding (whole table or a
// vocabulary shard) and the cross-entropy (whole rows or a shard's columns). A vocabulary shard
// outside [0, vocab) is refused before anything is queued; the embedding's tokens are checked
// against the vocabulary before a kernel reads or writes by them (checked_tokens).
#include "tessera/runtime/cpu/kernel_errors.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"
#include "tessera/runtime/cuda/cuda_element.hpp"
#include "tessera/runtime/cuda/cuda_kernels.hpp"
#include "tessera/runtime/cuda/cuda_ops.hpp"

namespace tessera {

template <typename Launch>
void CudaKernels::checked_tokens(const std::int32_t* tokens, std::int64_t n, std::int64_t vocab, const char* where,
                                 const Launch& launch) const {
  if (host_calls_ == nullptr) {
    token_check_.check(tokens, n, vocab, stream_, where);  // waits for the stream
    launch(nullptr);
    return;
  }
  // A backward after its forward, which has just checked these tokens and waited: this check waits
  // for nothing, and the kernel writes nothing when it fails.
  launch(token_check_.check_on_stream(tokens, n, vocab, stream_, *host_calls_, where));
}

// The ops of each element type of the table (f32 and bf16: nv() passes a float pointer on as it is).
#define TESSERA_CUDA_TOKEN_OPS(T)                                                                                   \
  void CudaKernels::embedding_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe,              \
                                      std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const {       \
    select_cuda_device(device_);                                                                                    \
    token_check_.check(tokens, b * t, v, stream_, "CudaKernels::embedding_forward"); /* waits for the stream */     \
    detail::launch_embedding_forward(nv(out), tokens, nv(wte), nv(wpe), b, t, c, stream_);                          \
  }                                                                                                                 \
  void CudaKernels::embedding_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens, std::int64_t b, \
                                       std::int64_t t, std::int64_t c, std::int64_t v) const {                      \
    select_cuda_device(device_);                                                                                    \
    checked_tokens(tokens, b * t, v, "CudaKernels::embedding_backward", [&](const unsigned long long* refuse) {     \
      detail::launch_embedding_backward(nv(dwte), nv(dwpe), nv(dout), tokens, b, t, c, stream_, refuse);            \
    });                                                                                                             \
  }                                                                                                                 \
  void CudaKernels::embedding_shard_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe,        \
                                            std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t first,     \
                                            std::int64_t rows, std::int64_t vocab) const {                          \
    select_cuda_device(device_);                                                                                    \
    check_vocab_shard("CudaKernels::embedding_shard_forward", first, rows, vocab);                                  \
    token_check_.check(tokens, b * t, vocab, stream_, "CudaKernels::embedding_shard_forward");                      \
    detail::launch_embedding_shard_forward(nv(out), tokens, nv(wte), nv(wpe), b, t, c, first, rows, stream_);       \
  }                                                                                                                 \
  void CudaKernels::embedding_shard_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens,          \
                                             std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t first,    \
                                             std::int64_t rows, std::int64_t vocab) const {                         \
    select_cuda_device(device_);                                                                                    \
    check_vocab_shard("CudaKernels::embedding_shard_backward", first, rows, vocab);                                 \
    checked_tokens(tokens, b * t, vocab, "CudaKernels::embedding_shard_backward",                                   \
                   [&](const unsigned long long* refuse) {                                                          \
                     detail::launch_embedding_shard_backward(nv(dwte), nv(dwpe), nv(dout), tokens, b, t, c, first,  \
                                                             rows, stream_, refuse);                                \
                   });                                                                                              \
  }                                                                                                                 \
  void CudaKernels::cross_entropy_forward(float* losses, float* lse, const T* logits, const std::int32_t* targets,  \
                                          std::int64_t n, std::int64_t v) const {                                   \
    select_cuda_device(device_);                                                                                    \
    detail::launch_cross_entropy_forward(losses, lse, nv(logits), targets, n, v, stream_);                          \
  }                                                                                                                 \
  void CudaKernels::cross_entropy_backward(T* dlogits, const T* logits, const float* lse,                          \
                                           const std::int32_t* targets, float dloss, std::int64_t n,                \
                                           std::int64_t v) const {                                                  \
    select_cuda_device(device_);                                                                                    \
    detail::launch_cross_entropy_backward(nv(dlogits), nv(logits), lse, targets, dloss, n, v, stream_);             \
  }                                                                                                                 \
  void CudaKernels::cross_entropy_shard_forward(float* lse, float* target_logit, const T* logits,                  \
                                                const std::int32_t* targets, std::int64_t n, std::int64_t v,        \
                                                std::int64_t first, std::int64_t vocab) const {                     \
    select_cuda_device(device_);                                                                                    \
    check_vocab_shard("CudaKernels::cross_entropy_shard_forward", first, v, vocab);                                 \
    detail::launch_cross_entropy_shard_forward(lse, target_logit, nv(logits), targets, n, v, first, vocab,          \
                                               stream_);                                                            \
  }                                                                                                                 \
  void CudaKernels::cross_entropy_shard_backward(T* dlogits, const T* logits, const float* lse,                    \
                                                 const std::int32_t* targets, float dloss, std::int64_t n,          \
                                                 std::int64_t v, std::int64_t first) const {                        \
    select_cuda_device(device_);                                                                                    \
    detail::launch_cross_entropy_shard_backward(nv(dlogits), nv(logits), lse, targets, dloss, n, v, first,         \
                                                stream_);                                                           \
  }
TESSERA_CUDA_TOKEN_OPS(float)
TESSERA_CUDA_TOKEN_OPS(Bf16)
#undef TESSERA_CUDA_TOKEN_OPS

// The vocabulary-sharded loss's combine, f32 only.
void CudaKernels::cross_entropy_shard_combine(float* losses, float* lse, const float* lse_parts,
                                              const float* target_logit, const std::int32_t* targets, std::int64_t n,
                                              std::int64_t parts) const {
  select_cuda_device(device_);
  if (parts < 1) throw_no_lse_parts("CudaKernels::cross_entropy_shard_combine", parts);
  detail::launch_cross_entropy_shard_combine(losses, lse, lse_parts, target_logit, targets, n, parts, stream_);
}

}  // namespace tessera
