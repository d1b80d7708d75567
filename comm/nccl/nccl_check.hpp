// TESSERA_NCCL_CHECK / TESSERA_CUDA_CHECK: run an NCCL or CUDA runtime call and throw
// std::runtime_error when it fails, with the world rank, file:line, the call text and the decoded
// error, e.g.
//   rank 3 comm/nccl/nccl_communicator.cpp:88: ncclGroupEnd() failed: unhandled system error (...)
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

namespace tessera::detail {

void check_nccl(ncclResult_t result, const char* call, const char* file, int line);
void check_cuda(cudaError_t error, const char* call, const char* file, int line);

}  // namespace tessera::detail

#define TESSERA_NCCL_CHECK(call) ::tessera::detail::check_nccl((call), #call, __FILE__, __LINE__)
#define TESSERA_CUDA_CHECK(call) ::tessera::detail::check_cuda((call), #call, __FILE__, __LINE__)
