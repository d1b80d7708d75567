// PendingFreeList: a block whose events have completed goes back at once; one with a pending event
// is kept (counted in bytes()) until reclaim_completed() finds its events done; reclaim_all() waits.
#include "tessera/runtime/pending_free_list.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tessera/runtime/cpu/worker_stream.hpp"
#include "tests/runtime/stream_gate.hpp"

namespace tessera {
namespace {

using test::Gate;

std::vector<void*> released;  // blocks given to count_release, in order

void count_release(void* ptr, std::size_t, MemoryKind) noexcept { released.push_back(ptr); }

int block_a, block_b;  // addresses only: nothing is allocated

TEST(PendingFreeList, ReleasesAtOnceWhenNothingIsPending) {
  released.clear();
  PendingFreeList list(&count_release);
  list.add(&block_a, 64, MemoryKind::kDevice, {});
  const Event done[] = {Event(), failed_event(std::make_exception_ptr(std::runtime_error("x")))};
  list.add(&block_b, 32, MemoryKind::kPinnedHost, done);
  EXPECT_EQ(released, (std::vector<void*>{&block_a, &block_b}));
  EXPECT_EQ(list.size(), 0u);
  EXPECT_EQ(list.bytes(), 0u);
}

TEST(PendingFreeList, KeepsABlockUntilItsEventsComplete) {
  released.clear();
  Gate gate;
  WorkerStream stream(StreamRole::kCopy);
  PendingFreeList list(&count_release);
  stream.launch_host_function([&] { gate.wait(); });
  const Event pending[] = {Event(), stream.record()};
  list.add(&block_a, 4096, MemoryKind::kDevice, pending);
  list.add(&block_b, 100, MemoryKind::kDevice, {});
  EXPECT_EQ(released, (std::vector<void*>{&block_b}));
  EXPECT_EQ(list.size(), 1u);
  EXPECT_EQ(list.bytes(), 4096u);
  list.reclaim_completed();
  EXPECT_EQ(list.size(), 1u) << "the event is still pending: the block must stay";
  gate.open();
  stream.synchronize();
  list.reclaim_completed();
  EXPECT_EQ(released, (std::vector<void*>{&block_b, &block_a}));
  EXPECT_EQ(list.bytes(), 0u);
}

TEST(PendingFreeList, ReclaimAllWaitsForPendingEvents) {
  released.clear();
  Gate gate;
  WorkerStream stream(StreamRole::kCopy);
  PendingFreeList list(&count_release);
  stream.launch_host_function([&] { gate.wait(); });
  const Event pending[] = {stream.record()};
  list.add(&block_a, 8, MemoryKind::kDevice, pending);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.open();
  });
  list.reclaim_all();
  EXPECT_TRUE(pending[0].query()) << "reclaim_all released the block before its event completed";
  EXPECT_EQ(released, (std::vector<void*>{&block_a}));
  opener.join();
}

}  // namespace
}  // namespace tessera
