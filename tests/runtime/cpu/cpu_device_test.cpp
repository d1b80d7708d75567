// CpuDevice: memory kinds, its streams, asynchronous copies and stream-ordered freeing (the
// recordStream hazard). The copy stream's worker is held at a Gate to make "pending" observable:
// copies not yet done, blocks not yet reusable. Stream semantics: worker_stream_test, inline_stream_test.
#include "tessera/runtime/cpu/cpu_device.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tessera/runtime/tensor.hpp"
#include "tests/runtime/stream_gate.hpp"

namespace tessera {
namespace {

using test::Gate;

std::vector<float> ramp(std::int64_t n, float start) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i % 1000) * 0.25f;
  return v;
}

TEST(CpuDevice, PinnedHostMemoryIsTrackedInItsOwnTier) {
  CpuDevice device;
  EXPECT_EQ(device.memory_space(), MemorySpace::kHost);
  EXPECT_TRUE(device.holds_data());
  {
    Tensor d = Tensor::zeros(device, {100}, DType::kF32, MemoryCategory::kOptimizerState);
    Tensor p = Tensor::zeros(device, {3, 50}, DType::kF32, MemoryCategory::kOptimizerState, MemoryKind::kPinnedHost);
    EXPECT_EQ(d.memory_kind(), MemoryKind::kDevice);
    EXPECT_EQ(p.memory_kind(), MemoryKind::kPinnedHost);
    EXPECT_EQ(p.view(10, {5}).memory_kind(), MemoryKind::kPinnedHost);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.data()) % 64, 0u) << "pinned host memory is 64-byte aligned";
    EXPECT_EQ(device.memory().current(MemoryCategory::kOptimizerState), 400) << "device tier";
    EXPECT_EQ(device.memory(MemoryKind::kDevice).current_total(), 400) << "device tier";
    EXPECT_EQ(device.memory(MemoryKind::kPinnedHost).current(MemoryCategory::kOptimizerState), 600)
        << "pinned host tier";
    EXPECT_EQ(device.memory(MemoryKind::kPinnedHost).current_total(), 600) << "pinned host tier";
    // Pinned host memory is ordinary memory for the CPU kernels and copies.
    p.copy_from_host_f32(ramp(150, 1.0f));
    EXPECT_EQ(p.to_host_f32(), ramp(150, 1.0f));
  }
  EXPECT_EQ(device.memory(MemoryKind::kPinnedHost).current_total(), 0);
  EXPECT_EQ(device.memory(MemoryKind::kPinnedHost).peak_total(), 600);
  EXPECT_EQ(device.memory().peak_total(), 400);
}

TEST(CpuDevice, EachRoleHasOneStream) {
  CpuDevice device;
  for (StreamRole role : {StreamRole::kCompute, StreamRole::kCommunication, StreamRole::kCopy}) {
    EXPECT_EQ(device.stream(role).role(), role) << stream_role_name(role);
    EXPECT_EQ(&device.stream(role), &device.stream(role)) << stream_role_name(role);
  }
  EXPECT_NE(&device.stream(StreamRole::kCompute), &device.stream(StreamRole::kCopy));
}

TEST(CpuDevice, InlineStreamsRunWorkWhenIssued) {
  CpuDevice device;
  for (StreamRole role : {StreamRole::kCompute, StreamRole::kCommunication}) {
    Stream& s = device.stream(role);
    int ran = 0;
    s.launch_host_function([&] { ++ran; });
    EXPECT_EQ(ran, 1) << stream_role_name(role) << ": host function runs inline";
    EXPECT_TRUE(s.record().query()) << stream_role_name(role) << ": events are complete when recorded";
    std::vector<float> host(8, 0.0f);
    Tensor t = Tensor::from_host(device, ramp(8, 2.0f), {8}, DType::kF32, MemoryCategory::kWorkspace);
    device.copy_to_host_async(host.data(), t.data(), t.nbytes(), s);
    EXPECT_EQ(host, ramp(8, 2.0f)) << stream_role_name(role) << ": the copy is done when issued";
  }
}

TEST(CpuDevice, SynchronizeWaitsForTheCopyStreamAndReportsItsFailure) {
  CpuDevice device;
  Gate gate;
  std::atomic<bool> ran{false};
  device.stream(StreamRole::kCopy).launch_host_function([&] {
    gate.wait();
    ran = true;
  });
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.open();
  });
  device.synchronize();
  EXPECT_TRUE(ran.load()) << "Device::synchronize returned before the copy stream's work ran";
  opener.join();
  device.stream(StreamRole::kCopy).launch_host_function([] { throw std::runtime_error("copy failed"); });
  EXPECT_THROW(device.synchronize(), std::runtime_error);
  EXPECT_NO_THROW(device.stream(StreamRole::kCompute).synchronize()) << "other streams are unaffected";
}

TEST(CpuDevice, AsyncCopiesOnTheCopyStream) {
  CpuDevice device;
  Stream& copy = device.stream(StreamRole::kCopy);
  for (std::int64_t n : {std::int64_t{7}, std::int64_t{1} << 19}) {  // memcpy and stream_copy paths
    const std::vector<float> values = ramp(n, 3.0f);
    Tensor src = Tensor::from_host(device, values, {n}, DType::kF32, MemoryCategory::kWorkspace);
    Tensor pinned = Tensor::zeros(device, {n}, DType::kF32, MemoryCategory::kCommBuffers, MemoryKind::kPinnedHost);
    Tensor back = Tensor::zeros(device, {n}, DType::kF32, MemoryCategory::kWorkspace);
    device.copy_to_host_async(pinned.data(), src.data(), src.nbytes(), copy);
    device.copy_from_host_async(back.data(), pinned.data(), pinned.nbytes(), copy);
    copy.synchronize();
    EXPECT_EQ(pinned.to_host_f32(), values) << "copy_to_host_async of " << n << " floats";
    EXPECT_EQ(back.to_host_f32(), values) << "copy_from_host_async of " << n << " floats";
  }
  CpuDevice other;
  float x = 0.0f, y = 1.0f;
  EXPECT_THROW(device.copy_to_host_async(&x, &y, sizeof x, other.stream(StreamRole::kCopy)), std::invalid_argument);
}

// The recordStream hazard: a copy queued on the copy stream reads buffer A; A's last tensor is
// released before the copy has run. The tracker must see A freed at once, but the memory must stay
// A's (not reused, not clobbered) until the copy stream has passed the copy.
void check_release_while_copy_pending(std::int64_t n) {
  SCOPED_TRACE("buffer of " + std::to_string(n) + " floats");
  CpuDevice device;
  Stream& copy = device.stream(StreamRole::kCopy);
  const std::vector<float> original = ramp(n, -5.0f);
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  Tensor a = Tensor::from_host(device, original, {n}, DType::kF32, MemoryCategory::kActivations);
  const void* a_address = a.data();

  Gate gate;
  copy.launch_host_function([&] { gate.wait(); });
  std::vector<float> host(static_cast<std::size_t>(n), 0.0f);
  device.copy_to_host_async(host.data(), a.data(), bytes, copy);
  a.record_stream(copy);
  a = Tensor();  // release A while the copy is still queued

  EXPECT_EQ(device.memory().current(MemoryCategory::kActivations), 0) << "the tracker sees A freed at once";
  EXPECT_EQ(device.pending_free_bytes(), bytes) << "A's block is held until the copy stream passes the copy";

  // Allocation churn of the same size: none may get A's block, and A's bytes must stay intact.
  for (int round = 0; round < 4; ++round) {
    std::vector<Tensor> others;
    for (int i = 0; i < 6; ++i) {
      Tensor t = Tensor::empty(device, {n}, DType::kF32, MemoryCategory::kActivations);
      EXPECT_NE(t.data(), a_address) << "round " << round << " allocation " << i << " reused A's block";
      t.copy_from_host_f32(std::vector<float>(static_cast<std::size_t>(n), 99.0f));
      others.push_back(t);
    }
  }
  EXPECT_EQ(std::memcmp(a_address, original.data(), bytes), 0) << "A's bytes were clobbered while pending";
  EXPECT_EQ(host[0], 0.0f) << "the copy cannot have run: the worker is held at the gate";

  gate.open();
  copy.synchronize();
  EXPECT_EQ(host, original) << "the copy read A's original contents";
  device.synchronize();
  EXPECT_EQ(device.pending_free_bytes(), 0u) << "A's block is reclaimed once the copy is done";
}

TEST(CpuDevice, ReleasedBufferIsNotReusedWhileACopyReadsIt) {
  check_release_while_copy_pending(4096);     // 16 KiB: a block malloc would hand out again at once
  check_release_while_copy_pending(1 << 19);  // 2 MiB: the non-temporal copy path
}

TEST(CpuDevice, CompletedBlocksAreReclaimedByLaterAllocations) {
  CpuDevice device;
  Stream& copy = device.stream(StreamRole::kCopy);
  Gate gate;
  copy.launch_host_function([&] { gate.wait(); });
  Tensor a = Tensor::empty(device, {256}, DType::kF32, MemoryCategory::kWorkspace);
  a.record_stream(copy);
  a = Tensor();
  EXPECT_EQ(device.pending_free_bytes(), 1024u);
  gate.open();
  copy.synchronize();
  Tensor b = Tensor::empty(device, {8}, DType::kF32, MemoryCategory::kWorkspace);  // reclaims on allocate
  EXPECT_EQ(device.pending_free_bytes(), 0u);
}

TEST(CpuDevice, StorageWithoutRecordedStreamsIsFreedAtOnce) {
  CpuDevice device;
  Gate gate;
  device.stream(StreamRole::kCopy).launch_host_function([&] { gate.wait(); });
  {
    Tensor a = Tensor::empty(device, {256}, DType::kF32, MemoryCategory::kWorkspace);
    a.record_stream(device.stream(StreamRole::kCompute));  // inline: its events are complete
  }
  EXPECT_EQ(device.pending_free_bytes(), 0u);
  gate.open();
}

TEST(CpuDevice, BlocksOfAFailedStreamAreStillReclaimed) {
  CpuDevice device;
  Stream& copy = device.stream(StreamRole::kCopy);
  copy.launch_host_function([] { throw std::runtime_error("copy failed"); });
  Tensor a = Tensor::empty(device, {64}, DType::kF32, MemoryCategory::kWorkspace);
  a.record_stream(copy);
  a = Tensor();
  EXPECT_THROW(device.synchronize(), std::runtime_error);
  EXPECT_EQ(device.pending_free_bytes(), 0u) << "a failed event is complete: the block is free to go";
}

TEST(CpuDevice, DestructorWaitsForQueuedCopiesAndPendingBlocks) {
  const std::vector<float> original = ramp(1000, 8.0f);
  std::vector<float> host(original.size(), 0.0f);
  Gate gate;
  auto device = std::make_unique<CpuDevice>();
  Stream& copy = device->stream(StreamRole::kCopy);
  copy.launch_host_function([&] { gate.wait(); });
  {
    Tensor a = Tensor::from_host(*device, original, {1000}, DType::kF32, MemoryCategory::kWorkspace);
    device->copy_to_host_async(host.data(), a.data(), a.nbytes(), copy);
    a.record_stream(copy);
  }
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.open();
  });
  device.reset();
  opener.join();
  EXPECT_EQ(host, original) << "the device finished the queued copy before freeing its source";
}

}  // namespace
}  // namespace tessera
