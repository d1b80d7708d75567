// check_nccl: decode the error into an exception that says where it happened.
#include "tessera/comm/nccl/nccl_check.hpp"

#include <stdexcept>
#include <string>

namespace tessera::detail {

void check_nccl(ncclResult_t result, const char* call, const char* file, int line) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  throw std::runtime_error(error_location(file, line) + ": " + call + " failed: " + ncclGetErrorString(result) +
                           " (run with NCCL_DEBUG=WARN for NCCL's own explanation)");
}

}  // namespace tessera::detail
