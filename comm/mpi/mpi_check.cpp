// check_mpi: decodes an MPI error code into an exception that says where it happened.
#include "tessera/comm/mpi/mpi_check.hpp"

#include <mpi.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace tessera::detail {
namespace {

// "/src/tessera/comm/mpi/x.cpp" -> "comm/mpi/x.cpp"
const char* source_path(const char* file) {
  const char* best = file;
  for (const char* layer : {"/comm/", "/launch/"}) {
    if (const char* hit = std::strstr(file, layer)) best = hit + 1;
  }
  return best;
}

}  // namespace

void check_mpi(int code, const char* call, const char* file, int line) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) std::strcpy(text, "unknown MPI error");
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw std::runtime_error("rank " + std::to_string(rank) + " " + source_path(file) + ":" + std::to_string(line) +
                           ": " + call + " failed: " + text);
}

}  // namespace tessera::detail
