// make_device_world's choice on the CUDA device: mpi stages through pinned host memory on the GPU's
// buffers; auto takes NCCL only where this build has it and no two ranks use the same GPU (so two
// ranks on a one-GPU machine get the staged world); nccl with ranks sharing a GPU is refused, naming
// both ranks, on every rank. Compiled only with CUDA; skips without a usable GPU.
// tessera-test-ranks: 1 2
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/comm/device_communicator.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/tensor.hpp"
#include "tests/runtime/cuda/gpu_rank_test.hpp"

namespace tessera {
namespace {

class DeviceCommChoice : public testing::GpuRankTest {
 protected:
  void SetUp() override {
    GpuRankTest::SetUp();
    if (IsSkipped()) return;
    host_ = world_.get();
    device_ = rank_gpu();
    sharing_ = host_->size() > device_count(DeviceChoice::kCuda) * std::max(1, info_.num_nodes);
  }

  MpiCommunicator* host_ = nullptr;
  std::unique_ptr<Device> device_;
  bool sharing_ = false;  // more ranks than GPUs: some share one
};

TEST_F(DeviceCommChoice, MpiStagesTheGpusBuffers) {
  auto world = make_device_world(*device_, *host_, CommOptions{}, DeviceComm::kMpi);
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->backend(), CommBackend::kMpi);
  EXPECT_EQ(world->memory_space(), MemorySpace::kGpu);
  const int n = world->size(), r = world->rank();
  Tensor buf = Tensor::from_host(*device_, std::vector<float>(4096, static_cast<float>(r + 1)), {4096}, DType::kF32,
                                 MemoryCategory::kGradients);
  world->all_reduce_f32(Span(buf.data(), 4096), DType::kBF16, ReduceOp::kSum).wait();
  EXPECT_EQ(buf.to_host_f32()[4095], static_cast<float>(n * (n + 1) / 2)) << "rank " << r;
}

TEST_F(DeviceCommChoice, AutoStagesWhenRanksShareAGpu) {
  auto world = make_device_world(*device_, *host_, CommOptions{}, DeviceComm::kAuto);
  ASSERT_NE(world, nullptr);
  const CommBackend expected = nccl_backend_built() && !sharing_ ? CommBackend::kNccl : CommBackend::kMpi;
  EXPECT_EQ(world->backend(), expected) << "rank " << host_->rank() << " of " << host_->size();
}

TEST_F(DeviceCommChoice, NcclRefusesRanksThatShareAGpu) {
  if (!sharing_) GTEST_SKIP() << "every rank has a GPU of its own here";
  try {
    make_device_world(*device_, *host_, CommOptions{}, DeviceComm::kNccl);
    FAIL() << "NCCL was made for ranks that share a GPU";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("ranks 0 and 1 use the same GPU"), std::string::npos) << message;
    EXPECT_NE(message.find("mpi"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tessera
