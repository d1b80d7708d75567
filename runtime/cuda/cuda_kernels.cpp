// CudaKernels: each table entry makes the device current and calls the instantiation of its typed
// launcher (cuda_ops.hpp) for its element type (float, or __nv_bfloat16 for Bf16) on the kernels'
// stream, passing the workspace where the launcher needs scratch. The ops that index by token id or
// target (embedding, cross-entropy) are in cuda_token_ops.cpp.
#include "tessera/runtime/cuda/cuda_kernels.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"
#include "tessera/runtime/cuda/cuda_element.hpp"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#if TESSERA_HAVE_CUDNN
#include "tessera/runtime/cuda/cudnn/cudnn_attention.hpp"
#endif

namespace tessera {

CudaKernels::CudaKernels(int device, cudaStream_t stream, GemmMath math)
    : device_(device), stream_(stream), math_(math), blas_(device, stream), token_check_(device) {
#if TESSERA_HAVE_CUDNN
  try {
    fused_ = std::make_unique<CudnnAttention>(device, stream);
  } catch (const std::exception& e) {
    fused_absent_ = std::string("cuDNN did not start: ") + e.what();
  }
#else
  fused_absent_ = "this build has no cuDNN";
#endif
}

CudaKernels::~CudaKernels() = default;

template <typename E>
E* CudaKernels::scratch(std::size_t count, const char* what) const {
  if (count * sizeof(E) > blas_.workspace_bytes()) {
    throw std::invalid_argument(std::string("CudaKernels::") + what + " needs " + std::to_string(count * sizeof(E)) +
                                " bytes of scratch; the workspace holds " + std::to_string(blas_.workspace_bytes()) +
                                "; split the call into smaller ones");
  }
  return static_cast<E*>(blas_.workspace());
}

void CudaKernels::gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                       const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                       std::int64_t ldc) const {
  select_cuda_device(device_);
  detail::launch_gemm(blas_, math_, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void CudaKernels::linear_forward(float* out, const float* inp, const float* weight, const float* bias, std::int64_t n,
                                 std::int64_t c, std::int64_t oc) const {
  select_cuda_device(device_);
  detail::launch_linear_forward(blas_, math_, out, inp, weight, bias, n, c, oc);
}

void CudaKernels::linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                  const float* weight, std::int64_t n, std::int64_t c, std::int64_t oc) const {
  select_cuda_device(device_);
  detail::launch_linear_backward(blas_, math_, dinp, dweight, dbias, dout, inp, weight, n, c, oc);
}

void CudaKernels::linear_gelu_forward(float* out, float* pre, const float* inp, const float* weight, const float* bias,
                                      std::int64_t n, std::int64_t c, std::int64_t oc) const {
  select_cuda_device(device_);
  detail::launch_linear_forward(blas_, math_, pre, inp, weight, bias, n, c, oc);
  detail::launch_gelu_forward(out, static_cast<const float*>(pre), n * oc, stream_);
}

void CudaKernels::linear_gelu_backward(float* dinp, float* dweight, float* dbias, float* dout, const float* pre,
                                       const float* inp, const float* weight, std::int64_t n, std::int64_t c,
                                       std::int64_t oc) const {
  select_cuda_device(device_);
  detail::launch_gelu_backward(dout, pre, static_cast<const float*>(dout), n * oc, stream_);
  detail::launch_linear_backward(blas_, math_, dinp, dweight, dbias, static_cast<const float*>(dout), inp, weight, n, c,
                                 oc);
}

// The norms, for each (activation, parameter) type pair of the table: (f32, f32), (bf16, bf16) and
// (bf16, f32).
#define TESSERA_CUDA_NORM_OPS(T, W)                                                                               \
  void CudaKernels::layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const W* weight,            \
                                      const W* bias, std::int64_t n, std::int64_t c, float eps) const {            \
    select_cuda_device(device_);                                                                                  \
    detail::launch_layernorm_forward(nv(out), mean, rstd, nv(inp), nv(weight), nv(bias), n, c, eps, stream_);     \
  }                                                                                                               \
  void CudaKernels::layernorm_backward(T* dinp, W* dweight, W* dbias, const T* dout, const T* inp,               \
                                       const W* weight, const float* mean, const float* rstd, std::int64_t n,     \
                                       std::int64_t c) const {                                                    \
    select_cuda_device(device_);                                                                                  \
    const std::size_t floats = blas_.workspace_bytes() / sizeof(float);                                           \
    detail::launch_layernorm_backward(nv(dinp), nv(dweight), nv(dbias), nv(dout), nv(inp), nv(weight), mean, rstd, \
                                      n, c, scratch<float>(floats, "layernorm_backward"), floats, stream_);       \
  }                                                                                                               \
  void CudaKernels::residual_layernorm_forward(T* sum, T* out, float* mean, float* rstd, const T* a, const T* b, \
                                               const W* weight, const W* bias, std::int64_t n, std::int64_t c,    \
                                               float eps) const {                                                 \
    select_cuda_device(device_);                                                                                  \
    detail::launch_residual_layernorm_forward(nv(sum), nv(out), mean, rstd, nv(a), nv(b), nv(weight), nv(bias), n, \
                                              c, eps, stream_);                                                   \
  }                                                                                                               \
  void CudaKernels::residual_layernorm_backward(T* dinp, W* dweight, W* dbias, const T* dout, const T* dresidual, \
                                                const T* inp, const W* weight, const float* mean,                 \
                                                const float* rstd, std::int64_t n, std::int64_t c) const {        \
    select_cuda_device(device_);                                                                                  \
    const std::size_t floats = blas_.workspace_bytes() / sizeof(float);                                           \
    detail::launch_residual_layernorm_backward(nv(dinp), nv(dweight), nv(dbias), nv(dout), nv(dresidual), nv(inp), \
                                               nv(weight), mean, rstd, n, c,                                      \
                                               scratch<float>(floats, "residual_layernorm_backward"), floats,     \
                                               stream_);                                                          \
  }                                                                                                               \
  void CudaKernels::rmsnorm_forward(T* out, float* rstd, const T* inp, const W* weight, std::int64_t n,          \
                                    std::int64_t c, float eps) const {                                            \
    select_cuda_device(device_);                                                                                  \
    detail::launch_rmsnorm_forward(nv(out), rstd, nv(inp), nv(weight), n, c, eps, stream_);                       \
  }                                                                                                               \
  void CudaKernels::rmsnorm_backward(T* dinp, W* dweight, const T* dout, const T* inp, const W* weight,          \
                                     const float* rstd, std::int64_t n, std::int64_t c) const {                   \
    select_cuda_device(device_);                                                                                  \
    const std::size_t floats = blas_.workspace_bytes() / sizeof(float);                                           \
    detail::launch_rmsnorm_backward(nv(dinp), nv(dweight), nv(dout), nv(inp), nv(weight), rstd, n, c,            \
                                    scratch<float>(floats, "rmsnorm_backward"), floats, stream_);                 \
  }
TESSERA_CUDA_NORM_OPS(float, float)
TESSERA_CUDA_NORM_OPS(Bf16, Bf16)
TESSERA_CUDA_NORM_OPS(Bf16, float)
#undef TESSERA_CUDA_NORM_OPS

void CudaKernels::rotary_qkv_forward(float* qkv, const float* proj, std::int64_t b, std::int64_t t, std::int64_t nh,
                                     std::int64_t nkv, std::int64_t hs, float theta) const {
  select_cuda_device(device_);
  detail::launch_rotary_qkv_forward(qkv, proj, b, t, nh, nkv, hs, theta, stream_);
}

void CudaKernels::rotary_qkv_backward(float* dproj, const float* dqkv, std::int64_t b, std::int64_t t, std::int64_t nh,
                                      std::int64_t nkv, std::int64_t hs, float theta) const {
  select_cuda_device(device_);
  detail::launch_rotary_qkv_backward(dproj, dqkv, b, t, nh, nkv, hs, theta, stream_);
}

namespace {

// The bf16 copies the fused attention works on, carved from the caller's scratch: qkv (b,t,3c), out
// and dout (b,t,c), dqkv (b,t,3c), then the library's workspace; each 256-byte aligned.
struct AttentionScratch {
  __nv_bfloat16 *qkv, *out, *dout, *dqkv;
  void* workspace;
  std::size_t bytes;
};

AttentionScratch carve_attention_scratch(void* base, const AttentionShape& s, std::size_t workspace) {
  auto round_up = [](std::size_t n) { return (n + 255) / 256 * 256; };
  const auto qkv_bytes = round_up(static_cast<std::size_t>(s.b * s.t * 3 * s.c) * sizeof(__nv_bfloat16));
  const auto out_bytes = round_up(static_cast<std::size_t>(s.b * s.t * s.c) * sizeof(__nv_bfloat16));
  auto* p = static_cast<char*>(base);
  AttentionScratch a{};
  a.qkv = reinterpret_cast<__nv_bfloat16*>(p);
  a.out = reinterpret_cast<__nv_bfloat16*>(p + qkv_bytes);
  a.dout = reinterpret_cast<__nv_bfloat16*>(p + qkv_bytes + out_bytes);
  a.dqkv = reinterpret_cast<__nv_bfloat16*>(p + qkv_bytes + 2 * out_bytes);
  a.workspace = p + 2 * qkv_bytes + 2 * out_bytes;
  a.bytes = 2 * qkv_bytes + 2 * out_bytes + round_up(workspace);
  return a;
}

void require_scratch(const void* scratch, const char* op) {
  if (scratch == nullptr) {
    throw std::invalid_argument(std::string("CudaKernels::") + op +
                                ": cuDNN attention needs attention_scratch_bytes() of scratch; got none");
  }
}

}  // namespace

FusedAttention* CudaKernels::fused_attention(const AttentionShape& shape, DType dtype, std::string* why) const {
  if (!fused_) {
    if (why != nullptr) *why = fused_absent_;
    return nullptr;
  }
  if (dtype == DType::kF32 && math_ != GemmMath::kBf16) {
    if (why != nullptr) *why = std::string("GEMM math ") + gemm_math_name(math_) + " (cuDNN's attention is bf16)";
    return nullptr;
  }
  if (shape.b == 0 || shape.t == 0) {
    if (why != nullptr) *why = "an empty batch";
    return nullptr;
  }
  return fused_->supports(shape, why) ? fused_.get() : nullptr;
}

bool CudaKernels::fused_attention_at(const AttentionShape& shape, DType dtype, std::string* why) const {
  select_cuda_device(device_);
  return fused_attention(shape, dtype, why) != nullptr;
}

std::string CudaKernels::attention_kernel() const {
  if (fused_ && math_ == GemmMath::kBf16) {
    return fused_->name() + " fused attention (bf16 q, k, v; f32 softmax; the tiled kernel for a shape cuDNN refuses)";
  }
  if (fused_) {
    return fused_->name() +
           " fused attention for bf16 tensors; the tiled online-softmax kernel for f32 tensors "
           "(cuDNN's attention runs on them with --gemm-math bf16)";
  }
  return std::string("tiled online-softmax kernel (") + fused_absent_ + ")";
}

std::size_t CudaKernels::attention_scratch_bytes(std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                                 DType dtype) const {
  const AttentionShape shape{b, t, c, nh};
  select_cuda_device(device_);
  FusedAttention* fused = fused_attention(shape, dtype);
  if (fused == nullptr) return 0;
  const std::size_t workspace = std::max(fused->forward_workspace(shape), fused->backward_workspace(shape));
  if (dtype == DType::kBF16) return workspace;  // the library reads and writes the tensors themselves
  return carve_attention_scratch(nullptr, shape, workspace).bytes;
}

void CudaKernels::attention_forward(float* out, float* lse, const float* qkv, std::int64_t b, std::int64_t t,
                                    std::int64_t c, std::int64_t nh, void* scratch) const {
  select_cuda_device(device_);
  const AttentionShape shape{b, t, c, nh};
  if (FusedAttention* fused = fused_attention(shape, DType::kF32)) {
    require_scratch(scratch, "attention_forward");
    const AttentionScratch a = carve_attention_scratch(scratch, shape, fused->forward_workspace(shape));
    detail::launch_convert(qkv, DType::kF32, a.qkv, DType::kBF16, b * t * 3 * c, stream_);
    fused->forward(a.out, lse, a.qkv, shape, a.workspace);
    detail::launch_convert(a.out, DType::kBF16, out, DType::kF32, b * t * c, stream_);
    return;
  }
  detail::launch_attention_forward(out, lse, qkv, b, t, c, nh, stream_);
}

void CudaKernels::attention_backward(float* dqkv, float* delta, const float* dout, const float* qkv, const float* out,
                                     const float* lse, std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                     void* scratch) const {
  select_cuda_device(device_);
  const AttentionShape shape{b, t, c, nh};
  if (FusedAttention* fused = fused_attention(shape, DType::kF32)) {
    require_scratch(scratch, "attention_backward");
    const AttentionScratch a = carve_attention_scratch(scratch, shape, fused->backward_workspace(shape));
    // out came from the forward's bf16 out, so its bf16 copy is that out again, bit for bit.
    detail::launch_convert(qkv, DType::kF32, a.qkv, DType::kBF16, b * t * 3 * c, stream_);
    detail::launch_convert(out, DType::kF32, a.out, DType::kBF16, b * t * c, stream_);
    detail::launch_convert(dout, DType::kF32, a.dout, DType::kBF16, b * t * c, stream_);
    fused->backward(a.dqkv, a.dout, a.qkv, a.out, lse, shape, a.workspace);
    detail::launch_convert(a.dqkv, DType::kBF16, dqkv, DType::kF32, b * t * 3 * c, stream_);
    return;
  }
  detail::launch_attention_backward(dqkv, delta, dout, qkv, out, lse, b, t, c, nh, stream_);
}

void CudaKernels::attention_forward(Bf16* out, float* lse, const Bf16* qkv, std::int64_t b, std::int64_t t,
                                    std::int64_t c, std::int64_t nh, void* scratch) const {
  select_cuda_device(device_);
  const AttentionShape shape{b, t, c, nh};
  if (FusedAttention* fused = fused_attention(shape, DType::kBF16)) {
    if (fused->forward_workspace(shape) > 0) require_scratch(scratch, "attention_forward");
    fused->forward(nv(out), lse, nv(qkv), shape, scratch);  // in place: no copies
    return;
  }
  detail::launch_attention_forward(nv(out), lse, nv(qkv), b, t, c, nh, stream_);
}

void CudaKernels::attention_backward(Bf16* dqkv, float* delta, const Bf16* dout, const Bf16* qkv, const Bf16* out,
                                     const float* lse, std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                     void* scratch) const {
  select_cuda_device(device_);
  const AttentionShape shape{b, t, c, nh};
  if (FusedAttention* fused = fused_attention(shape, DType::kBF16)) {
    if (fused->backward_workspace(shape) > 0) require_scratch(scratch, "attention_backward");
    fused->backward(nv(dqkv), nv(dout), nv(qkv), nv(out), lse, shape, scratch);
    return;
  }
  detail::launch_attention_backward(nv(dqkv), delta, nv(dout), nv(qkv), nv(out), lse, b, t, c, nh, stream_);
}

void CudaKernels::gelu_forward(float* out, const float* inp, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_gelu_forward(out, inp, n, stream_);
}

void CudaKernels::gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_gelu_backward(dinp, inp, dout, n, stream_);
}

void CudaKernels::relu_forward(float* out, const float* inp, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_relu_forward(out, inp, n, stream_);
}

void CudaKernels::relu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_relu_backward(dinp, inp, dout, n, stream_);
}

void CudaKernels::silu_forward(float* out, const float* inp, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_silu_forward(out, inp, n, stream_);
}

void CudaKernels::silu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_silu_backward(dinp, inp, dout, n, stream_);
}

void CudaKernels::dropout_apply(float* out, const float* inp, std::int64_t n, const DropoutMask& mask) const {
  select_cuda_device(device_);
  detail::launch_dropout_apply(out, inp, n, mask, stream_);
}

void CudaKernels::swiglu_forward(float* out, const float* inp, std::int64_t n, std::int64_t f) const {
  select_cuda_device(device_);
  detail::launch_swiglu_forward(out, inp, n, f, stream_);
}

void CudaKernels::swiglu_backward(float* dinp, const float* dout, const float* inp, std::int64_t n,
                                  std::int64_t f) const {
  select_cuda_device(device_);
  detail::launch_swiglu_backward(dinp, dout, inp, n, f, stream_);
}

void CudaKernels::add(float* out, const float* a, const float* b, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_add(out, a, b, n, stream_);
}

void CudaKernels::scale(float* x, float s, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_scale(x, s, n, stream_);
}

void CudaKernels::sum(const float* x, std::int64_t n, double* out) const {
  select_cuda_device(device_);
  detail::launch_sum(x, n, out, scratch<double>(detail::reduce_scratch_doubles(n), "sum"), stream_);
}

void CudaKernels::sum_squares(const float* x, std::int64_t n, double* out) const {
  select_cuda_device(device_);
  detail::launch_sum_squares(x, n, out, scratch<double>(detail::reduce_scratch_doubles(n), "sum_squares"), stream_);
}

void CudaKernels::add_sum_squares(float* out, const float* a, const float* b, std::int64_t n,
                                  double* sum_squares_out) const {
  add(out, a, b, n);
  sum_squares(out, n, sum_squares_out);
}

void CudaKernels::add_bf16(float* out, const float* a, const Bf16* b, std::int64_t n, double* sum_squares_out) const {
  select_cuda_device(device_);
  detail::launch_add_bf16(out, a, nv(b), n, stream_);
  if (sum_squares_out != nullptr) sum_squares(out, n, sum_squares_out);
}

void CudaKernels::has_non_finite(const float* x, std::int64_t n, std::int32_t* out) const {
  select_cuda_device(device_);
  detail::launch_has_non_finite(x, n, out, stream_);
}

void CudaKernels::adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n,
                               const AdamWScalars& s) const {
  select_cuda_device(device_);
  detail::launch_adamw<float>(param, grad, m, v, nullptr, n, s, stream_);
}

void CudaKernels::adamw8bit_update(float* param, const float* grad, std::int8_t* m_codes, float* m_absmax,
                                   std::uint8_t* v_codes, float* v_absmax, std::int64_t n, std::int64_t block,
                                   std::span<const ParamSegment> segments, const AdamWScalars& no_decay,
                                   const AdamWScalars& decay) const {
  select_cuda_device(device_);
  ParamSegment* table = scratch<ParamSegment>(segments.size(), "adamw8bit_update");
  detail::launch_store_segments(table, segments, stream_);
  detail::launch_adamw8bit<float>(param, grad, m_codes, m_absmax, v_codes, v_absmax, nullptr, n, block, table,
                                  static_cast<std::int64_t>(segments.size()), no_decay, decay, stream_);
}

void CudaKernels::convert(const void* src, DType from, void* dst, DType to, std::int64_t n) const {
  select_cuda_device(device_);
  if (from == to) {
    TESSERA_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * dtype_size(from), cudaMemcpyDeviceToDevice, stream_));
    return;
  }
  if (!is_floating(from) || !is_floating(to)) {
    throw std::invalid_argument(std::string("CudaKernels::convert: cannot convert ") + dtype_name(from) + " to " +
                                dtype_name(to) + "; convert only between f32, bf16 and f16");
  }
  detail::launch_convert(src, from, dst, to, n, stream_);
}

// ---- the bf16 overloads of the compute ops: the __nv_bfloat16 launchers, on the same stream ----------
// (attention's is above: it runs cuDNN on the tensors in place whenever cuDNN takes the shape.)

void CudaKernels::gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                       const Bf16* a, std::int64_t lda, const Bf16* b, std::int64_t ldb, float beta, Bf16* c,
                       std::int64_t ldc) const {
  select_cuda_device(device_);
  detail::launch_gemm(blas_, math_, trans_a, trans_b, m, n, k, alpha, nv(a), lda, nv(b), ldb, beta, nv(c), ldc);
}

void CudaKernels::linear_forward(Bf16* out, const Bf16* inp, const Bf16* weight, const Bf16* bias, std::int64_t n,
                                 std::int64_t c, std::int64_t oc) const {
  select_cuda_device(device_);
  detail::launch_linear_forward(blas_, math_, nv(out), nv(inp), nv(weight), nv(bias), n, c, oc);
}

void CudaKernels::linear_backward(Bf16* dinp, Bf16* dweight, Bf16* dbias, const Bf16* dout, const Bf16* inp,
                                  const Bf16* weight, std::int64_t n, std::int64_t c, std::int64_t oc) const {
  select_cuda_device(device_);
  detail::launch_linear_backward(blas_, math_, nv(dinp), nv(dweight), nv(dbias), nv(dout), nv(inp), nv(weight), n, c,
                                 oc);
}

void CudaKernels::linear_gelu_forward(Bf16* out, Bf16* pre, const Bf16* inp, const Bf16* weight, const Bf16* bias,
                                      std::int64_t n, std::int64_t c, std::int64_t oc) const {
  select_cuda_device(device_);
  detail::launch_linear_forward(blas_, math_, nv(pre), nv(inp), nv(weight), nv(bias), n, c, oc);
  detail::launch_gelu_forward(nv(out), nv(static_cast<const Bf16*>(pre)), n * oc, stream_);
}

void CudaKernels::linear_gelu_backward(Bf16* dinp, Bf16* dweight, Bf16* dbias, Bf16* dout, const Bf16* pre,
                                       const Bf16* inp, const Bf16* weight, std::int64_t n, std::int64_t c,
                                       std::int64_t oc) const {
  select_cuda_device(device_);
  detail::launch_gelu_backward(nv(dout), nv(pre), nv(static_cast<const Bf16*>(dout)), n * oc, stream_);
  detail::launch_linear_backward(blas_, math_, nv(dinp), nv(dweight), nv(dbias), nv(static_cast<const Bf16*>(dout)),
                                 nv(inp), nv(weight), n, c, oc);
}


void CudaKernels::rotary_qkv_forward(Bf16* qkv, const Bf16* proj, std::int64_t b, std::int64_t t, std::int64_t nh,
                                     std::int64_t nkv, std::int64_t hs, float theta) const {
  select_cuda_device(device_);
  detail::launch_rotary_qkv_forward(nv(qkv), nv(proj), b, t, nh, nkv, hs, theta, stream_);
}

void CudaKernels::rotary_qkv_backward(Bf16* dproj, const Bf16* dqkv, std::int64_t b, std::int64_t t, std::int64_t nh,
                                      std::int64_t nkv, std::int64_t hs, float theta) const {
  select_cuda_device(device_);
  detail::launch_rotary_qkv_backward(nv(dproj), nv(dqkv), b, t, nh, nkv, hs, theta, stream_);
}

void CudaKernels::gelu_forward(Bf16* out, const Bf16* inp, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_gelu_forward(nv(out), nv(inp), n, stream_);
}

void CudaKernels::gelu_backward(Bf16* dinp, const Bf16* inp, const Bf16* dout, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_gelu_backward(nv(dinp), nv(inp), nv(dout), n, stream_);
}

void CudaKernels::relu_forward(Bf16* out, const Bf16* inp, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_relu_forward(nv(out), nv(inp), n, stream_);
}

void CudaKernels::relu_backward(Bf16* dinp, const Bf16* inp, const Bf16* dout, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_relu_backward(nv(dinp), nv(inp), nv(dout), n, stream_);
}

void CudaKernels::silu_forward(Bf16* out, const Bf16* inp, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_silu_forward(nv(out), nv(inp), n, stream_);
}

void CudaKernels::silu_backward(Bf16* dinp, const Bf16* inp, const Bf16* dout, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_silu_backward(nv(dinp), nv(inp), nv(dout), n, stream_);
}

void CudaKernels::dropout_apply(Bf16* out, const Bf16* inp, std::int64_t n, const DropoutMask& mask) const {
  select_cuda_device(device_);
  detail::launch_dropout_apply(nv(out), nv(inp), n, mask, stream_);
}

void CudaKernels::swiglu_forward(Bf16* out, const Bf16* inp, std::int64_t n, std::int64_t f) const {
  select_cuda_device(device_);
  detail::launch_swiglu_forward(nv(out), nv(inp), n, f, stream_);
}

void CudaKernels::swiglu_backward(Bf16* dinp, const Bf16* dout, const Bf16* inp, std::int64_t n, std::int64_t f) const {
  select_cuda_device(device_);
  detail::launch_swiglu_backward(nv(dinp), nv(dout), nv(inp), n, f, stream_);
}

void CudaKernels::add(Bf16* out, const Bf16* a, const Bf16* b, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_add(nv(out), nv(a), nv(b), n, stream_);
}

void CudaKernels::squared_error_forward(float* losses, const float* pred, const float* targets, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_squared_error_forward(losses, pred, targets, n, stream_);
}

void CudaKernels::squared_error_backward(float* dpred, const float* pred, const float* targets, float dloss,
                                         std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_squared_error_backward(dpred, pred, targets, dloss, n, stream_);
}

void CudaKernels::squared_error_forward(float* losses, const Bf16* pred, const float* targets, std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_squared_error_forward(losses, nv(pred), targets, n, stream_);
}

void CudaKernels::squared_error_backward(Bf16* dpred, const Bf16* pred, const float* targets, float dloss,
                                         std::int64_t n) const {
  select_cuda_device(device_);
  detail::launch_squared_error_backward(nv(dpred), nv(pred), targets, dloss, n, stream_);
}

}  // namespace tessera
