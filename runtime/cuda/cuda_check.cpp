// check_cuda / check_cublas: decode the error into an exception that says where it happened.
#include "tessera/runtime/cuda/cuda_check.hpp"

#include <mpi.h>

#include <cstring>
#include <stdexcept>

#include "tessera/runtime/device_error.hpp"

namespace tessera::detail {
namespace {

// The path from the first layer folder on: runtime/..., comm/..., tests/...
const char* short_path(const char* file) {
  const char* best = nullptr;
  for (const char* folder : {"/runtime/", "/comm/", "/tests/"}) {
    const char* at = std::strstr(file, folder);
    if (at != nullptr && (best == nullptr || at < best)) best = at;
  }
  return best != nullptr ? best + 1 : file;
}

}  // namespace

std::string error_location(const char* file, int line) {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  std::string where = std::string(short_path(file)) + ":" + std::to_string(line);
  if (!initialized || finalized) return where;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return "rank " + std::to_string(rank) + " " + where;
}

void check_cuda(cudaError_t error, const char* call, const char* file, int line) {
  if (error == cudaSuccess) return;
  throw DeviceError(call, error_location(file, line) + ": " + call + " failed: " + cudaGetErrorName(error) + ": " +
                              cudaGetErrorString(error));
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(error_location(file, line) + ": " + call + " failed: " + cublasGetStatusName(status) + ": " +
                           cublasGetStatusString(status));
}

}  // namespace tessera::detail
