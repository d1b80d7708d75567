// GpuRankTest: the fixture of the GPU tests that run under mpirun. It skips, naming why, without a
// usable GPU; otherwise it holds the MPI world and this rank's place on its node, from which
// rank_gpu() opens the rank's GPU as a program would (make_rank_device).
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/launch/rank_device.hpp"
#include "tessera/launch/rank_info.hpp"
#include "tests/runtime/cuda/gpu_test_support.hpp"

namespace tessera::testing {

class GpuRankTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_GPU();
    world_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
    info_ = discover_rank_info(*world_, read_launcher_env(process_environment()));
  }

  // This rank's GPU; f32 GEMM math by default, the arithmetic the CPU comparisons need.
  std::unique_ptr<Device> rank_gpu(GemmMath math = GemmMath::kF32) const {
    return make_rank_device(DeviceChoice::kCuda, info_, DeviceOptions{.gemm_math = math});
  }

  std::unique_ptr<MpiCommunicator> world_;
  RankInfo info_;
};

}  // namespace tessera::testing
