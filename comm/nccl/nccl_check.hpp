// TESSERA_NCCL_CHECK: run an NCCL call and throw std::runtime_error when it fails, with the world
// rank, file:line, the call text and the decoded error, e.g.
//   rank 3 comm/nccl/nccl_communicator.cpp:88: ncclGroupEnd() failed: unhandled system error (...)
// TESSERA_CUDA_CHECK (CUDA runtime calls) comes from runtime/cuda/cuda_check.hpp, in the same form.
#pragma once

#include <nccl.h>

#include "tessera/runtime/cuda/cuda_check.hpp"

namespace tessera::detail {

void check_nccl(ncclResult_t result, const char* call, const char* file, int line);

}  // namespace tessera::detail

#define TESSERA_NCCL_CHECK(call) ::tessera::detail::check_nccl((call), #call, __FILE__, __LINE__)
