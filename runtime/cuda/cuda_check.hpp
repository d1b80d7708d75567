// TESSERA_CUDA_CHECK / TESSERA_CUBLAS_CHECK / TESSERA_CUDA_CHECK_LAUNCH: run a CUDA runtime or
// cuBLAS(Lt) call, or check the kernel launch just made, and throw when it failed (a CUDA error:
// DeviceError naming the call; cuBLAS: std::runtime_error), with the world rank (when MPI is running), file:line, the
// call text and the decoded error:
//   rank 3 runtime/cuda/cuda_gemm.cu:88: cublasGemmEx_64(...) failed: CUBLAS_STATUS_NOT_SUPPORTED: ...
// Shared by the CUDA kernels, the CUDA device and the NCCL communicator (comm/nccl/nccl_check.hpp).
#pragma once

#include <cublas_api.h>
#include <cuda_runtime.h>

#include <string>

namespace tessera::detail {

// "rank R path:line" (path from the layer folder on, e.g. runtime/cuda/cuda_gemm.cu), or "path:line"
// outside an MPI run.
std::string error_location(const char* file, int line);

void check_cuda(cudaError_t error, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace tessera::detail

#define TESSERA_CUDA_CHECK(call) ::tessera::detail::check_cuda((call), #call, __FILE__, __LINE__)
#define TESSERA_CUBLAS_CHECK(call) ::tessera::detail::check_cublas((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: reports a bad configuration (grid, block, shared memory) at the launch.
#define TESSERA_CUDA_CHECK_LAUNCH(kernel) \
  ::tessera::detail::check_cuda(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)
