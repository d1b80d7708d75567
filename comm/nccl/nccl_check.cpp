// check_nccl / check_cuda: decode the error into an exception that says where it happened.
#include "comm/nccl/nccl_check.hpp"

#include <mpi.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace tessera::detail {
namespace {

std::string where(const char* file, int line) {
  const char* path = std::strstr(file, "/comm/");
  int rank = -1;
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return "rank " + std::to_string(rank) + " " + (path ? path + 1 : file) + ":" + std::to_string(line);
}

}  // namespace

void check_nccl(ncclResult_t result, const char* call, const char* file, int line) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  throw std::runtime_error(where(file, line) + ": " + call + " failed: " + ncclGetErrorString(result) +
                           " (run with NCCL_DEBUG=WARN for NCCL's own explanation)");
}

void check_cuda(cudaError_t error, const char* call, const char* file, int line) {
  if (error == cudaSuccess) return;
  throw std::runtime_error(where(file, line) + ": " + call + " failed: " + cudaGetErrorName(error) + ": " +
                           cudaGetErrorString(error));
}

}  // namespace tessera::detail
