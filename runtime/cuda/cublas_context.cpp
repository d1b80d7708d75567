// CublasContext: handles, workspace and the cuBLASLt algorithm cache.
#include "tessera/runtime/cuda/cublas_context.hpp"

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"

namespace tessera {

std::uint32_t pointer_alignment(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t align = 256;
  while (align > 1 && address % align != 0) align /= 2;
  return align;
}

CublasContext::CublasContext(int device, cudaStream_t stream, std::size_t workspace_bytes)
    : device_(device), stream_(stream), workspace_bytes_(workspace_bytes) {
  select_cuda_device(device);
  try {
    TESSERA_CUBLAS_CHECK(cublasCreate(&blas_));
    TESSERA_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
    TESSERA_CUBLAS_CHECK(cublasLtCreate(&lt_));
    TESSERA_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
    TESSERA_CUBLAS_CHECK(cublasSetWorkspace(blas_, workspace_, workspace_bytes_));
  } catch (...) {
    release();
    throw;
  }
}

CublasContext::~CublasContext() {
  select_cuda_device_noexcept(device_);
  release();
}

// cublasDestroy and cudaFree both synchronize the device (cuBLAS's documented behaviour), so work
// still queued on the stream finishes before its workspace is freed; this cannot be made
// non-blocking while cuBLAS handles are involved.
void CublasContext::release() noexcept {
  if (blas_ != nullptr) cublasDestroy(blas_);
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  if (workspace_ != nullptr) cudaFree(workspace_);
  workspace_ = nullptr;
  lt_ = nullptr;
  blas_ = nullptr;
}

std::optional<cublasLtMatmulAlgo_t> CublasContext::lt_algo(const LtMatmulKey& key, cublasLtMatmulDesc_t desc,
                                                           cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                           cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d) const {
  const std::lock_guard lock(cache_mutex_);
  if (auto it = algo_cache_.find(key); it != algo_cache_.end()) return it->second;
  cublasLtMatmulPreference_t pref = nullptr;
  TESSERA_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  std::optional<cublasLtMatmulAlgo_t> algo;
  try {
    const std::size_t bytes = workspace_bytes_;
    TESSERA_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof bytes));
    TESSERA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                              &key.align_a, sizeof key.align_a));
    TESSERA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                              &key.align_b, sizeof key.align_b));
    TESSERA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                              &key.align_c, sizeof key.align_c));
    TESSERA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                              &key.align_c, sizeof key.align_c));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lt_, desc, a, b, c, d, pref, 1, &result, &found);
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) TESSERA_CUBLAS_CHECK(status);
    if (status == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) algo = result.algo;
  } catch (...) {
    cublasLtMatmulPreferenceDestroy(pref);
    throw;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  algo_cache_.emplace(key, algo);
  return algo;
}

}  // namespace tessera
