// BlockCache and the CpuDevice's use of it: size classes (at least the request, 64-byte multiples,
// at most 12.5% over above 32 KiB), reuse of a freed block for the next request of its class and
// only of its class, the bound (cached bytes never above the peak in use), emptying the cache, a
// failed system allocation, and a CpuDevice whose trackers count Storage bytes exactly as before
// while a block is reused — including blocks held back by a pending stream.
#include "tessera/runtime/cpu/block_cache.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <vector>

#include "tessera/runtime/cpu/cpu_device.hpp"
#include "tessera/runtime/tensor.hpp"
#include "tests/runtime/stream_gate.hpp"

namespace tessera {
namespace {

TEST(BlockCache, SizeClassesCoverTheRequestWithBoundedWaste) {
  EXPECT_EQ(BlockCache::size_class(1), 64u);
  EXPECT_EQ(BlockCache::size_class(64), 64u);
  EXPECT_EQ(BlockCache::size_class(65), 128u);
  EXPECT_EQ(BlockCache::size_class(32 << 10), std::size_t{32} << 10);
  EXPECT_EQ(BlockCache::size_class((32 << 10) + 1), std::size_t{36} << 10);  // granule 4 KiB above 32 KiB
  EXPECT_EQ(BlockCache::size_class(std::size_t{1} << 30), std::size_t{1} << 30);
  for (std::size_t bytes = 1; bytes < (std::size_t{1} << 34); bytes = bytes * 3 + 7) {
    const std::size_t cls = BlockCache::size_class(bytes);
    EXPECT_GE(cls, bytes) << "class of " << bytes;
    EXPECT_EQ(cls % BlockCache::kAlignment, 0u) << "class of " << bytes << " is " << cls;
    if (bytes > (32 << 10)) {
      EXPECT_LE(static_cast<double>(cls), 1.125 * static_cast<double>(bytes)) << "class of " << bytes << " is " << cls;
    }
  }
  EXPECT_THROW(BlockCache::size_class(SIZE_MAX - 3), std::bad_alloc);
}

TEST(BlockCache, AFreedBlockServesTheNextRequestOfItsClassOnly) {
  BlockCache cache;
  void* a = cache.allocate(1000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % BlockCache::kAlignment, 0u);
  EXPECT_EQ(cache.system_allocations(), 1);
  cache.release(a, 1000);
  EXPECT_EQ(cache.cached_bytes(), BlockCache::size_class(1000));
  void* b = cache.allocate(3000);  // another class: a new block
  EXPECT_NE(b, a);
  EXPECT_EQ(cache.system_allocations(), 2);
  void* c = cache.allocate(990);  // the same class as 1000: the cached block
  EXPECT_EQ(c, a);
  EXPECT_EQ(cache.system_allocations(), 2);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  EXPECT_EQ(cache.in_use_bytes(), BlockCache::size_class(1000) + BlockCache::size_class(3000));
  cache.release(b, 3000);
  cache.release(c, 990);
  EXPECT_EQ(cache.in_use_bytes(), 0u);
}

TEST(BlockCache, CachedBytesStayWithinThePeakInUse) {
  BlockCache cache;
  // Peak in use: one 64 KiB block. Then blocks of other classes come and go one at a time: the
  // cache may keep at most 64 KiB of them.
  void* big = cache.allocate(64 << 10);
  cache.release(big, 64 << 10);
  for (std::size_t kib = 1; kib <= 40; kib += 3) {
    void* p = cache.allocate(kib << 10);
    cache.release(p, kib << 10);
    EXPECT_LE(cache.cached_bytes(), cache.peak_in_use_bytes()) << "after a " << kib << " KiB block";
  }
  EXPECT_EQ(cache.peak_in_use_bytes(), std::size_t{64} << 10);
  cache.release_cached();
  EXPECT_EQ(cache.cached_bytes(), 0u);
  const std::int64_t before = cache.system_allocations();
  void* again = cache.allocate(64 << 10);  // emptied: a new block
  EXPECT_EQ(cache.system_allocations(), before + 1);
  cache.release(again, 64 << 10);
}

TEST(BlockCache, AnImpossibleRequestFailsAndLeavesTheCacheConsistent) {
  BlockCache cache;
  void* p = cache.allocate(4096);
  cache.release(p, 4096);
  EXPECT_THROW(cache.allocate(std::size_t{1} << 50), std::bad_alloc);
  EXPECT_EQ(cache.cached_bytes(), 0u) << "a failed request empties the cache before it gives up";
  EXPECT_EQ(cache.in_use_bytes(), 0u);
}

TEST(CpuDeviceCache, ReusedBlocksAreTrackedExactlyAsNewOnes) {
  CpuDevice device;
  const std::int64_t n = 100000;  // 400000 bytes
  const void* first = nullptr;
  {
    Tensor a = Tensor::empty(device, {n}, DType::kF32, MemoryCategory::kActivations);
    first = a.data();
    EXPECT_EQ(device.memory().current(MemoryCategory::kActivations), 4 * n);
  }
  EXPECT_EQ(device.memory().current_total(), 0);
  EXPECT_EQ(device.cached_bytes(), BlockCache::size_class(4 * n));
  const std::int64_t allocations = device.block_cache().system_allocations();
  Tensor b = Tensor::empty(device, {n - 10}, DType::kF32, MemoryCategory::kGradients);
  EXPECT_EQ(b.data(), first) << "a request of the same class reuses the block";
  EXPECT_EQ(device.block_cache().system_allocations(), allocations);
  EXPECT_EQ(device.memory().current(MemoryCategory::kGradients), 4 * (n - 10)) << "Storage bytes, not the class";
  EXPECT_EQ(device.memory().current(MemoryCategory::kActivations), 0);
  EXPECT_EQ(device.cached_bytes(), 0u);
  b = Tensor();
  device.release_cached();
  EXPECT_EQ(device.cached_bytes(), 0u);
}

TEST(CpuDeviceCache, ABlockHeldByAPendingCopyIsNotReusedUntilTheCopyIsDone) {
  CpuDevice device;
  Stream& copy = device.stream(StreamRole::kCopy);
  test::Gate gate;
  copy.launch_host_function([&] { gate.wait(); });
  const void* held = nullptr;
  {
    Tensor a = Tensor::empty(device, {4096}, DType::kF32, MemoryCategory::kWorkspace);
    held = a.data();
    a.record_stream(copy);
  }
  Tensor b = Tensor::empty(device, {4096}, DType::kF32, MemoryCategory::kWorkspace);
  EXPECT_NE(b.data(), held) << "the block is still pending on the copy stream";
  gate.open();
  copy.synchronize();
  b = Tensor();
  Tensor c = Tensor::empty(device, {4096}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor d = Tensor::empty(device, {4096}, DType::kF32, MemoryCategory::kWorkspace);
  EXPECT_TRUE(c.data() == held || d.data() == held) << "once the copy is done the block is reused";
}

}  // namespace
}  // namespace tessera
