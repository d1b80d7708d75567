// make_nccl_communicator in a build without the NCCL backend refuses with a message that says how
// to get one (with the backend, tests/comm/nccl/ exercises it).
// tessera-test-ranks: 1
#include <gtest/gtest.h>
#include <mpi.h>

#include <stdexcept>
#include <string>

#include "comm/device_communicator.hpp"
#include "comm/mpi/mpi_communicator.hpp"

namespace tessera {
namespace {

TEST(DeviceCommunicator, BuiltFlagMatchesTheBuild) {
#if defined(TESSERA_HAVE_CUDA)
  EXPECT_TRUE(nccl_backend_built());
#else
  EXPECT_FALSE(nccl_backend_built());
  MpiCommunicator world(MPI_COMM_WORLD);
  try {
    make_nccl_communicator(world, 0, nullptr, CommOptions{});
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("no NCCL backend"), std::string::npos) << error.what();
  }
#endif
}

}  // namespace
}  // namespace tessera
