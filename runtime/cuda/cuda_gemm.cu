// CUDA GEMM and linear layer through cuBLAS and cuBLASLt.
//
// The table is row-major and cuBLAS column-major: a row-major (r,c) matrix with row stride ld is the
// column-major (c,r) matrix with leading dimension ld. So c = op(a) op(b) is computed as
// c^T = op(b)^T op(a)^T: cuBLAS gets b first, with m and n swapped and the same transpose flags.
//
// linear_forward adds the bias in the cuBLASLt epilogue (CUBLASLT_EPILOGUE_BIAS); when cuBLASLt has
// no algorithm for the shape and alignment, the bias is broadcast into out and the GEMM adds to it,
// as on the CPU. linear_backward takes dbias from a deterministic column-sum kernel (column_sum.cuh)
// rather than CUBLASLT_EPILOGUE_BGRADB, which writes instead of accumulating.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <optional>
#include <type_traits>

#include "tessera/runtime/cuda/column_sum.cuh"
#include "tessera/runtime/cuda/cublas_context.hpp"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"

namespace tessera::detail {
namespace {

template <typename T>
constexpr cudaDataType_t data_type() {
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
}

// f32 tensors: the arithmetic GemmMath names. bf16 tensors: bf16 tensor cores, f32 accumulation.
template <typename T>
cublasComputeType_t compute_type(GemmMath math) {
  if constexpr (std::is_same_v<T, float>) {
    switch (math) {
      case GemmMath::kF32: return CUBLAS_COMPUTE_32F;
      case GemmMath::kTf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
      case GemmMath::kBf16: return CUBLAS_COMPUTE_32F_FAST_16BF;
    }
  }
  return CUBLAS_COMPUTE_32F;
}

cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

// c (batch; m,n; row stride ldc, matrix stride stride_c) = beta * c, 0 when beta is 0: a GEMM with
// k == 0 (cuBLAS may leave c alone then).
template <typename T>
__global__ void scale_matrices_kernel(T* c, std::int64_t m, std::int64_t n, std::int64_t ldc, std::int64_t stride_c,
                                      std::int64_t batch, float beta) {
  const std::int64_t total = batch * m * n;
  for (std::int64_t idx = grid_start(); idx < total; idx += grid_stride()) {
    const std::int64_t p = idx / (m * n);
    const std::int64_t i = idx / n % m;
    const std::int64_t j = idx % n;
    T& x = c[p * stride_c + i * ldc + j];
    x = beta == 0.0f ? from_f32<T>(0.0f) : from_f32<T>(beta * to_f32(x));
  }
}

// out (n,oc): every row = bias (oc).
template <typename T>
__global__ void broadcast_rows_kernel(T* out, const T* bias, std::int64_t n, std::int64_t oc) {
  for (std::int64_t idx = grid_start(); idx < n * oc; idx += grid_stride()) out[idx] = bias[idx % oc];
}

// The value at (i, j) of a row-major matrix with row stride ld, for column_sums.
template <typename T>
struct MatrixValues {
  const T* x;
  std::int64_t ld;
  __device__ void operator()(std::int64_t i, std::int64_t j, float (&v)[1]) const { v[0] = to_f32(x[i * ld + j]); }
};

struct LtDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  LtDesc(cublasComputeType_t compute) { TESSERA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F)); }
  ~LtDesc() { cublasLtMatmulDescDestroy(desc); }
  template <typename V>
  void set(cublasLtMatmulDescAttributes_t attribute, const V& value) {
    TESSERA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value));
  }
};

struct LtLayout {
  cublasLtMatrixLayout_t layout = nullptr;
  LtLayout(cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    TESSERA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows),
                                                    static_cast<std::uint64_t>(cols), ld));
  }
  ~LtLayout() { cublasLtMatrixLayoutDestroy(layout); }
};

// out (n,oc) = inp (n,c) @ weight^T + bias through cuBLASLt's bias epilogue. Column-major:
// D (oc,n) = A^T B + bias, A = weight stored (c,oc), B = inp stored (c,n). False (nothing queued)
// when cuBLASLt has no algorithm for it.
template <typename T>
bool linear_forward_lt(const CublasContext& blas, GemmMath math, T* out, const T* inp, const T* weight, const T* bias,
                       std::int64_t n, std::int64_t c, std::int64_t oc) {
  const cudaDataType_t type = data_type<T>();
  const cublasComputeType_t compute = compute_type<T>(math);
  LtMatmulKey key;
  key.data_type = type;
  key.compute = compute;
  key.epilogue = CUBLASLT_EPILOGUE_BIAS;
  key.trans_a = true;
  key.m = oc, key.n = n, key.k = c, key.lda = c, key.ldb = c, key.ldc = oc;
  key.align_a = pointer_alignment(weight);
  key.align_b = pointer_alignment(inp);
  key.align_c = pointer_alignment(out);
  key.align_bias = pointer_alignment(bias);
  LtDesc desc(compute);
  desc.set(CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(CUBLAS_OP_T));
  desc.set(CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(CUBLAS_OP_N));
  desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<std::uint32_t>(CUBLASLT_EPILOGUE_BIAS));
  desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias));
  const LtLayout a(type, c, oc, c), b(type, c, n, c), d(type, oc, n, oc);
  const std::optional<cublasLtMatmulAlgo_t> algo = blas.lt_algo(key, desc.desc, a.layout, b.layout, d.layout, d.layout);
  if (!algo) return false;
  const float alpha = 1.0f, beta = 0.0f;
  TESSERA_CUBLAS_CHECK(cublasLtMatmul(blas.lt(), desc.desc, &alpha, weight, a.layout, inp, b.layout, &beta, out,
                                      d.layout, out, d.layout, &*algo, blas.workspace(), blas.workspace_bytes(),
                                      blas.stream()));
  return true;
}

}  // namespace

template <typename T>
void launch_gemm_batched(const CublasContext& blas, GemmMath math, bool trans_a, bool trans_b, std::int64_t m,
                         std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda,
                         std::int64_t stride_a, const T* b, std::int64_t ldb, std::int64_t stride_b, float beta, T* c,
                         std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (k == 0) {
    scale_matrices_kernel<T>
        <<<grid_for(batch * m * n), kThreads, 0, blas.stream()>>>(c, m, n, ldc, stride_c, batch, beta);
    TESSERA_CUDA_CHECK_LAUNCH("scale_matrices_kernel");
    return;
  }
  const cudaDataType_t type = data_type<T>();
  if (batch == 1) {
    TESSERA_CUBLAS_CHECK(cublasGemmEx_64(blas.blas(), op(trans_b), op(trans_a), n, m, k, &alpha, b, type, ldb, a, type,
                                         lda, &beta, c, type, ldc, compute_type<T>(math), CUBLAS_GEMM_DEFAULT));
    return;
  }
  TESSERA_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(blas.blas(), op(trans_b), op(trans_a), n, m, k, &alpha, b, type,
                                                     ldb, stride_b, a, type, lda, stride_a, &beta, c, type, ldc,
                                                     stride_c, batch, compute_type<T>(math), CUBLAS_GEMM_DEFAULT));
}

template <typename T>
void launch_gemm(const CublasContext& blas, GemmMath math, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                 std::int64_t k, float alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, float beta,
                 T* c, std::int64_t ldc) {
  launch_gemm_batched(blas, math, trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

template <typename T>
void launch_linear_forward(const CublasContext& blas, GemmMath math,
                           T* out,           // (n,oc)
                           const T* inp,     // (n,c)
                           const T* weight,  // (oc,c)
                           const T* bias,    // (oc) or null
                           std::int64_t n, std::int64_t c, std::int64_t oc) {
  if (n == 0 || oc == 0) return;
  if (bias == nullptr) {
    launch_gemm(blas, math, false, true, n, oc, c, 1.0f, inp, c, weight, c, 0.0f, out, oc);
    return;
  }
  if (c > 0 && linear_forward_lt(blas, math, out, inp, weight, bias, n, c, oc)) return;
  broadcast_rows_kernel<T><<<grid_for(n * oc), kThreads, 0, blas.stream()>>>(out, bias, n, oc);
  TESSERA_CUDA_CHECK_LAUNCH("broadcast_rows_kernel");
  launch_gemm(blas, math, false, true, n, oc, c, 1.0f, inp, c, weight, c, 1.0f, out, oc);
}

template <typename T>
void launch_linear_backward(const CublasContext& blas, GemmMath math,
                            T* dinp,          // (n,c) written, or null
                            T* dweight,       // (oc,c) accumulated
                            T* dbias,         // (oc) accumulated, or null
                            const T* dout,    // (n,oc)
                            const T* inp,     // (n,c)
                            const T* weight,  // (oc,c)
                            std::int64_t n, std::int64_t c, std::int64_t oc) {
  if (dinp != nullptr) launch_gemm(blas, math, false, false, n, c, oc, 1.0f, dout, oc, weight, c, 0.0f, dinp, c);
  launch_gemm(blas, math, true, false, oc, c, n, 1.0f, dout, oc, inp, c, 1.0f, dweight, c);
  if (dbias != nullptr) {
    column_sums<1, T>(ColumnOutputs<1, T>{{dbias}}, MatrixValues<T>{dout, oc}, n, oc,
                      static_cast<float*>(blas.workspace()), blas.workspace_bytes() / sizeof(float), blas.stream());
  }
}

#define TESSERA_INSTANTIATE_GEMM(T)                                                                                  \
  template void launch_gemm<T>(const CublasContext&, GemmMath, bool, bool, std::int64_t, std::int64_t, std::int64_t, \
                               float, const T*, std::int64_t, const T*, std::int64_t, float, T*, std::int64_t);      \
  template void launch_gemm_batched<T>(const CublasContext&, GemmMath, bool, bool, std::int64_t, std::int64_t,       \
                                       std::int64_t, float, const T*, std::int64_t, std::int64_t, const T*,          \
                                       std::int64_t, std::int64_t, float, T*, std::int64_t, std::int64_t,            \
                                       std::int64_t);                                                                \
  template void launch_linear_forward<T>(const CublasContext&, GemmMath, T*, const T*, const T*, const T*,           \
                                         std::int64_t, std::int64_t, std::int64_t);                                  \
  template void launch_linear_backward<T>(const CublasContext&, GemmMath, T*, T*, T*, const T*, const T*, const T*,  \
                                          std::int64_t, std::int64_t, std::int64_t);
TESSERA_INSTANTIATE_GEMM(float)
TESSERA_INSTANTIATE_GEMM(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_GEMM

}  // namespace tessera::detail
