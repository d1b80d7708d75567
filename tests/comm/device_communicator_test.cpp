// make_nccl_communicator in a build without the NCCL backend refuses with a message that says how
// to get one (with the backend, tests/comm/nccl/ exercises it); make_device_world gives host devices
// no communicator of their own (the MPI world serves them) in every build.
// tessera-test-ranks: 1
#include "tessera/comm/device_communicator.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <stdexcept>
#include <string>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/runtime/device_factory.hpp"

namespace tessera {
namespace {

TEST(DeviceCommunicator, BuiltFlagMatchesTheBuild) {
#if defined(TESSERA_HAVE_NCCL)
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

TEST(DeviceCommunicator, HostDevicesUseTheHostWorld) {
  MpiCommunicator world(MPI_COMM_WORLD);
  auto cpu = make_device(DeviceChoice::kCpu);
  auto meta = make_device(DeviceChoice::kMeta);
  EXPECT_EQ(make_device_world(*cpu, world, CommOptions{}), nullptr) << "the CPU device reduces through MPI";
  EXPECT_EQ(make_device_world(*meta, world, CommOptions{}), nullptr) << "the meta device reduces nothing";
}

}  // namespace
}  // namespace tessera
