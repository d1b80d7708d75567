// CudaDevice on one GPU (compiled only with CUDA; every test skips, naming the reason, without a
// usable GPU): memory by kind and category with the trackers, the pool's reuse and its allocated /
// reserved / peak figures, stream-ordered freeing (a block freed while a copy is queued is not reused
// before the copy ran), events across streams, host functions and their failure semantics, pinned
// asynchronous copies, synchronize, out-of-memory, and the factory. A host function held at a Gate
// keeps a stream's later work back so that "not yet" can be observed. The factory without a GPU is
// tested in every build (tests/runtime/device_factory_test.cpp).
#include "tessera/runtime/cuda/cuda_device.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tessera/runtime/out_of_memory.hpp"
#include "tessera/runtime/storage.hpp"
#include "tessera/runtime/tensor.hpp"
#include "tests/runtime/cuda/gpu_test_support.hpp"
#include "tests/runtime/stream_gate.hpp"

namespace tessera {
namespace {

using test::Gate;

std::vector<float> ramp(std::int64_t n, float start) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i % 1000) * 0.25f;
  return v;
}

std::string message_of(const std::exception& e) { return e.what(); }

constexpr std::int64_t kMiB = 1 << 20;

TEST(CudaDevice, MemoryByKindAndCategoryWithTheTrackers) {
  TESSERA_REQUIRE_GPU();
  CudaDevice device(0);
  EXPECT_EQ(device.kind(), DeviceKind::kCuda);
  EXPECT_EQ(device.memory_space(), MemorySpace::kGpu);
  EXPECT_EQ(device.name().rfind("cuda:0 (", 0), 0u) << device.name();
  {
    Tensor d = Tensor::zeros(device, {100}, DType::kF32, MemoryCategory::kGradients);
    Tensor a = Tensor::empty(device, {3, 50}, DType::kF32, MemoryCategory::kActivations);
    Tensor p = Tensor::zeros(device, {64}, DType::kF32, MemoryCategory::kOptimizerState, MemoryKind::kPinnedHost);
    EXPECT_EQ(device.memory().current(MemoryCategory::kGradients), 400);
    EXPECT_EQ(device.memory().current(MemoryCategory::kActivations), 600);
    EXPECT_EQ(device.memory().current_total(), 1000) << "device tier";
    EXPECT_EQ(device.memory(MemoryKind::kPinnedHost).current(MemoryCategory::kOptimizerState), 256) << "pinned tier";
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d.data()) % 256, 0u) << "pool blocks are 256-byte aligned";
    EXPECT_EQ(d.to_host_f32(), std::vector<float>(100, 0.0f)) << "zeros() on the GPU";
    EXPECT_EQ(p.to_host_f32(), std::vector<float>(64, 0.0f)) << "zeros() in pinned host memory";
    a.copy_from_host_f32(ramp(150, 1.0f));
    EXPECT_EQ(a.to_host_f32(), ramp(150, 1.0f)) << "host -> GPU -> host";
    Tensor b = Tensor::empty(device, {150}, DType::kF32, MemoryCategory::kActivations);
    b.copy_from(a.reshape({150}));  // GPU -> GPU on the compute stream
    EXPECT_EQ(b.to_host_f32(), ramp(150, 1.0f)) << "GPU -> GPU";
    p.copy_from_host_f32(ramp(64, 3.0f));
    EXPECT_EQ(p.to_host_f32(), ramp(64, 3.0f)) << "pinned host memory reads back";
  }
  EXPECT_EQ(device.memory().current_total(), 0);
  EXPECT_EQ(device.memory().peak_total(), 1600);
  EXPECT_EQ(device.memory(MemoryKind::kPinnedHost).current_total(), 0);
}

TEST(CudaDevice, PoolReusesBlocksAndReportsReservedAndPeak) {
  TESSERA_REQUIRE_GPU();
  CudaDevice device(0);
  const AllocatorStats empty = device.allocator_stats();
  ASSERT_TRUE(empty.known());
  EXPECT_EQ(empty.allocated, 0);
  void* first = nullptr;
  {
    Tensor t = Tensor::empty(device, {64 * kMiB / 4}, DType::kF32, MemoryCategory::kWorkspace);
    first = t.data();
    const AllocatorStats held = device.allocator_stats();
    EXPECT_GE(held.allocated, 64 * kMiB) << held.describe();
    EXPECT_GE(held.reserved, 64 * kMiB) << held.describe();
  }
  device.synchronize();  // the free is ordered on the compute stream
  const AllocatorStats freed = device.allocator_stats();
  EXPECT_EQ(freed.allocated, 0) << freed.describe();
  EXPECT_GE(freed.reserved, 64 * kMiB) << "the pool keeps what it reserved: " << freed.describe();
  EXPECT_GE(freed.peak_reserved, 64 * kMiB) << freed.describe();
  EXPECT_GE(freed.peak_allocated, 64 * kMiB) << freed.describe();
  {
    Tensor again = Tensor::empty(device, {64 * kMiB / 4}, DType::kF32, MemoryCategory::kWorkspace);
    EXPECT_EQ(again.data(), first) << "the same size comes from the cached block";
    EXPECT_EQ(device.allocator_stats().reserved, freed.reserved) << "no new reservation";
  }
  // Pinned host blocks are cached by size class.
  void* pinned = nullptr;
  {
    Tensor p = Tensor::empty(device, {1000}, DType::kF32, MemoryCategory::kCommBuffers, MemoryKind::kPinnedHost);
    pinned = p.data();
    EXPECT_EQ(device.allocator_stats(MemoryKind::kPinnedHost).allocated, 4096) << "4000 bytes -> the 4 KiB class";
  }
  device.synchronize();
  Tensor p2 = Tensor::empty(device, {1024}, DType::kF32, MemoryCategory::kCommBuffers, MemoryKind::kPinnedHost);
  EXPECT_EQ(p2.data(), pinned) << "same size class, same block";
  const AllocatorStats host = device.allocator_stats(MemoryKind::kPinnedHost);
  EXPECT_EQ(host.reserved, 4096) << host.describe();
  EXPECT_EQ(host.peak_reserved, 4096) << host.describe();
}

TEST(CudaDevice, BlockFreedWhileACopyIsQueuedIsNotReusedBeforeTheCopyRan) {
  TESSERA_REQUIRE_GPU();
  CudaDevice device(0);
  const std::int64_t n = 2 * kMiB;  // 8 MiB of f32
  Stream& copy = device.stream(StreamRole::kCopy);
  // Pinned: a copy into pageable memory would make cudaMemcpyAsync itself wait for the gate.
  Tensor out = Tensor::empty(device, {n}, DType::kF32, MemoryCategory::kCommBuffers, MemoryKind::kPinnedHost);
  std::fill(out.data_as<float>(), out.data_as<float>() + n, -1.0f);
  Gate gate;
  void* old_block = nullptr;
  {
    Tensor source = Tensor::from_host(device, ramp(n, 5.0f), {n}, DType::kF32, MemoryCategory::kActivations);
    old_block = source.data();
    copy.launch_host_function([&gate] { gate.wait(); });
    device.copy_to_host_async(out.data(), source.data(), source.nbytes(), copy);  // queued behind the gate
    source.record_stream(copy);
  }  // destroyed: the block waits for the copy stream
  EXPECT_EQ(device.pending_free_bytes(), static_cast<std::size_t>(n * 4)) << "held aside while the copy is queued";
  EXPECT_EQ(device.memory().current_total(), 0) << "the tracker already counts it free";
  Tensor next = Tensor::from_host(device, ramp(n, -7.0f), {n}, DType::kF32, MemoryCategory::kActivations);
  EXPECT_NE(next.data(), old_block) << "a block still read by the queued copy was handed out again";
  gate.open();
  copy.synchronize();
  const std::vector<float> expected = ramp(n, 5.0f);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), out.data_as<float>()))
      << "the queued copy read the freed block's original contents";
  device.synchronize();
  EXPECT_EQ(device.pending_free_bytes(), 0u) << "given back once the copy stream passed it";
}

TEST(CudaDevice, EventsOrderStreamsWithoutBlockingTheHost) {
  TESSERA_REQUIRE_GPU();
  CudaDevice device(0);
  Stream& copy = device.stream(StreamRole::kCopy);
  Stream& compute = device.stream(StreamRole::kCompute);
  Gate gate;
  std::atomic<int> order{0};
  int copy_ran = 0, compute_ran = 0;
  copy.launch_host_function([&] {
    gate.wait();
    copy_ran = ++order;
  });
  const Event copied = copy.record();
  EXPECT_FALSE(copied.query()) << "held at the gate";
  const auto t0 = std::chrono::steady_clock::now();
  compute.wait(copied);  // must not block the host
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1)) << "Stream::wait blocked the host";
  compute.launch_host_function([&] { compute_ran = ++order; });
  const Event computed = compute.record();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(computed.query()) << "compute ran past an event it waits for";
  EXPECT_EQ(compute_ran, 0);
  gate.open();
  computed.synchronize();
  EXPECT_TRUE(copied.query());
  EXPECT_EQ(copy_ran, 1) << "copy stream's host function first";
  EXPECT_EQ(compute_ran, 2) << "then the compute stream's, after its wait";
  EXPECT_TRUE(Event().query()) << "a default event is complete";
  compute.wait(Event());  // and waiting on it is a no-op
  compute.synchronize();
}

TEST(CudaDevice, HostFunctionFailuresStayWithTheStream) {
  TESSERA_REQUIRE_GPU();
  CudaStream stream(0, StreamRole::kCopy);  // not the device's: a failed stream stays failed
  std::vector<int> ran;
  Gate gate;
  stream.launch_host_function([&] {
    gate.wait();
    ran.push_back(1);
  });
  const Event before = stream.record();
  stream.launch_host_function([&] {
    ran.push_back(2);
    throw std::runtime_error("host function 2 failed");
  });
  stream.launch_host_function([&] { ran.push_back(3); });  // later work still runs
  const Event after = stream.record();
  // Another stream waiting on the failed event fails too.
  CudaStream follower(0, StreamRole::kCompute);
  follower.wait(after);
  const Event follower_after = follower.record();
  gate.open();
  EXPECT_NO_THROW(before.synchronize()) << "an event before the failure completes cleanly";
  try {
    after.synchronize();
    ADD_FAILURE() << "the event after the failure completed cleanly";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(message_of(e), "host function 2 failed");
  }
  EXPECT_TRUE(after.query()) << "a failed event has completed";
  try {
    stream.synchronize();
    ADD_FAILURE() << "synchronize() did not rethrow the stream's failure";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(message_of(e), "host function 2 failed");
  }
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 3}));
  try {
    follower_after.synchronize();
    ADD_FAILURE() << "a stream that waited on a failed event did not fail";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(message_of(e), "host function 2 failed");
  }
  // A foreign (non-CUDA) failed event fails the waiting stream as well.
  CudaStream other(0, StreamRole::kCopy);
  other.wait(failed_event(std::make_exception_ptr(std::runtime_error("foreign failure"))));
  EXPECT_THROW(other.synchronize(), std::runtime_error);
}

TEST(CudaDevice, PinnedAsynchronousCopiesRoundTrip) {
  TESSERA_REQUIRE_GPU();
  CudaDevice device(0);
  const std::int64_t n = 4 * kMiB;  // 16 MiB
  Stream& copy = device.stream(StreamRole::kCopy);
  Stream& compute = device.stream(StreamRole::kCompute);
  Tensor host_in = Tensor::empty(device, {n}, DType::kF32, MemoryCategory::kCommBuffers, MemoryKind::kPinnedHost);
  Tensor host_out = Tensor::zeros(device, {n}, DType::kF32, MemoryCategory::kCommBuffers, MemoryKind::kPinnedHost);
  const std::vector<float> values = ramp(n, 0.5f);
  std::copy(values.begin(), values.end(), host_in.data_as<float>());  // pinned memory is host memory
  Tensor gpu = Tensor::empty(device, {n}, DType::kF32, MemoryCategory::kActivations);
  copy.wait(compute.record());  // fresh memory is ready in compute-stream order
  device.copy_from_host_async(gpu.data(), host_in.data(), gpu.nbytes(), copy);
  const Event uploaded = copy.record();
  compute.wait(uploaded);
  device.kernels().scale(gpu.data_as<float>(), 2.0f, n);  // on the compute stream, after the upload
  copy.wait(compute.record());
  device.copy_to_host_async(host_out.data(), gpu.data(), gpu.nbytes(), copy);
  copy.record().synchronize();
  std::vector<float> expected(values);
  for (float& x : expected) x *= 2.0f;
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), host_out.data_as<float>()))
      << "upload, scale, download across the copy and compute streams";
  CudaStream foreign(0, StreamRole::kCopy);
  EXPECT_THROW(device.copy_to_host_async(host_out.data(), gpu.data(), 4, foreign), std::invalid_argument);
}

TEST(CudaDevice, SynchronizeWaitsForEveryStream) {
  TESSERA_REQUIRE_GPU();
  CudaDevice device(0);
  std::atomic<int> done{0};
  Gate gate;
  for (StreamRole role : {StreamRole::kCompute, StreamRole::kCommunication, StreamRole::kCopy}) {
    device.stream(role).launch_host_function([&] {
      gate.wait();
      ++done;
    });
  }
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gate.open();
  });
  device.synchronize();
  EXPECT_EQ(done.load(), 3) << "synchronize() returned before every stream's work ran";
  opener.join();
  for (StreamRole role : {StreamRole::kCompute, StreamRole::kCommunication, StreamRole::kCopy}) {
    EXPECT_EQ(device.stream(role).role(), role);
    EXPECT_EQ(&device.stream(role), &device.stream(role));
  }
}

TEST(CudaDevice, OutOfMemoryNamesTheDeviceAndCategory) {
  TESSERA_REQUIRE_GPU();
  CudaDevice device(0);
  std::size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  const std::size_t huge = 2 * total;
  try {
    Storage::allocate(device, huge, MemoryCategory::kActivations);
    ADD_FAILURE() << "an allocation of twice the GPU's memory succeeded";
  } catch (const OutOfMemoryError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("cuda:0"), std::string::npos) << message;
    EXPECT_NE(message.find("activations"), std::string::npos) << message;
  }
  Tensor fine = Tensor::zeros(device, {1024}, DType::kF32, MemoryCategory::kWorkspace);
  EXPECT_EQ(fine.to_host_f32(), std::vector<float>(1024, 0.0f)) << "the device works after an out-of-memory";
  const MemoryBudget budget = device.memory_budget();
  EXPECT_GT(budget.process_bytes, 0) << budget.process_source;
  EXPECT_NE(budget.process_source.find("cudaMemGetInfo"), std::string::npos) << budget.process_source;
}

TEST(CudaDevice, FactoryMakesItForCudaAndAuto) {
  TESSERA_REQUIRE_GPU();
  EXPECT_GE(device_count(DeviceChoice::kCuda), 1);
  auto cuda = make_device(DeviceChoice::kCuda);
  EXPECT_EQ(cuda->kind(), DeviceKind::kCuda);
  EXPECT_EQ(make_device(DeviceChoice::kAuto)->kind(), DeviceKind::kCuda) << "auto prefers a usable GPU";
  auto tf32 = make_device(DeviceChoice::kCuda, DeviceOptions{0, GemmMath::kTf32});
  EXPECT_EQ(static_cast<CudaDevice&>(*tf32).cuda_kernels().gemm_math(), GemmMath::kTf32);
}

}  // namespace
}  // namespace tessera
