// TESSERA_MPI_CHECK: runs an MPI call and throws std::runtime_error when it fails, with the call
// text, file:line, the decoded MPI error and the world rank:
//   rank 3 comm/mpi/mpi_algorithms.cpp:88: MPI_Waitall(...) failed: MPI_ERR_TRUNCATE: message truncated
// Communicators set MPI_ERRORS_RETURN on their MPI_Comm so errors reach this check.
#pragma once

namespace tessera::detail {

void check_mpi(int code, const char* call, const char* file, int line);

}  // namespace tessera::detail

#define TESSERA_MPI_CHECK(call) ::tessera::detail::check_mpi((call), #call, __FILE__, __LINE__)
