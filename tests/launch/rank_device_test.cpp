// make_rank_device: the CPU and meta choices as make_device gives them, auto resolving as the
// factory does, and the GPU picked from the local rank when there are GPUs (skipped without).
#include "tessera/launch/rank_device.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

RankInfo local_rank(int local, int local_size) {
  RankInfo info;
  info.rank = local;
  info.world_size = local_size;
  info.local_rank = local;
  info.local_size = local_size;
  info.hostname = "test-host";
  return info;
}

TEST(RankDevice, CpuMetaAndAuto) {
  EXPECT_EQ(make_rank_device(DeviceChoice::kCpu, local_rank(1, 2))->kind(), DeviceKind::kCpu);
  EXPECT_EQ(make_rank_device(DeviceChoice::kMeta, local_rank(1, 2))->kind(), DeviceKind::kMeta);
  const DeviceKind expected = device_available(DeviceChoice::kCuda) ? DeviceKind::kCuda : DeviceKind::kCpu;
  EXPECT_EQ(make_rank_device(DeviceChoice::kAuto, local_rank(0, 1))->kind(), expected);
}

TEST(RankDevice, GpuFromTheLocalRank) {
  if (!device_available(DeviceChoice::kCuda)) {
    GTEST_SKIP() << device_unavailable_reason(DeviceChoice::kCuda);
  }
  const int gpus = device_count(DeviceChoice::kCuda);
  for (int local = 0; local < 2 * gpus && local < 4; ++local) {
    auto device = make_rank_device(DeviceChoice::kCuda, local_rank(local, 4));
    const std::string expected = "cuda:" + std::to_string(local % gpus) + " ";
    EXPECT_EQ(device->name().rfind(expected, 0), 0u)
        << "local rank " << local << " of " << gpus << " GPU(s): " << device->name();
  }
}

}  // namespace
}  // namespace tessera
