// CublasContext: the cuBLAS and cuBLASLt handles of one CudaKernels, bound to its stream, with the
// fixed device workspace they use (allocated once, here) and a cache of the cuBLASLt algorithm the
// heuristic picked for each GEMM shape (the heuristic costs tens of microseconds of host time).
//
// Between cuBLAS calls the kernels also use the workspace as scratch (column-sum partials,
// reduction partials, the 8-bit optimizer's segment table): everything runs on the one stream, so
// those uses never overlap.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace tessera {

// What decides the cuBLASLt algorithm of one matmul (column-major terms, as cuBLASLt sees it).
struct LtMatmulKey {
  int data_type = 0;  // cudaDataType of A, B, C, D
  int compute = 0;    // cublasComputeType_t
  int epilogue = 0;   // cublasLtEpilogue_t
  bool trans_a = false;
  bool trans_b = false;
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  std::uint32_t align_a = 0, align_b = 0, align_c = 0, align_bias = 0;  // bytes, up to 256
  auto operator<=>(const LtMatmulKey&) const = default;
};

// The largest power of two (up to 256) that divides the address: the alignment cuBLASLt may assume.
std::uint32_t pointer_alignment(const void* p);

class CublasContext {
 public:
  // 32 MiB: what cuBLAS recommends for Hopper; enough for the kernels' scratch at GPT scales.
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

  CublasContext(int device, cudaStream_t stream, std::size_t workspace_bytes = kWorkspaceBytes);
  ~CublasContext();  // never throws
  CublasContext(const CublasContext&) = delete;
  CublasContext& operator=(const CublasContext&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }
  cublasLtHandle_t lt() const { return lt_; }
  void* workspace() const { return workspace_; }
  std::size_t workspace_bytes() const { return workspace_bytes_; }

  // The heuristic's best algorithm for the matmul (desc, layouts) that `key` describes, cached by
  // key; nullopt when cuBLASLt has none for it (the caller falls back to cublasGemmEx).
  std::optional<cublasLtMatmulAlgo_t> lt_algo(const LtMatmulKey& key, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d) const;

 private:
  void release() noexcept;

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  mutable std::mutex cache_mutex_;
  mutable std::map<LtMatmulKey, std::optional<cublasLtMatmulAlgo_t>> algo_cache_;
};

}  // namespace tessera
