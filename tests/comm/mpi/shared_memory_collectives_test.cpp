// The MPI communicator's collectives through shared memory (comm/mpi/shared_memory_collectives.hpp),
// on ranks of one node: the same bits as the message path for inexact values in every dtype, op and
// wire; slots reused over hundreds of calls of changing kinds and sizes, around the slot size,
// without one call reading another's data; no message sent and no shared-memory name left behind;
// and a block that cannot be had (more than /dev/shm holds) leaves every rank on messages.
// tessera-test-ranks: 2 3 4
// tessera-test-timeout: 120
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tests/comm/comm_test_support.hpp"

namespace tessera {
namespace {

using testing::messy_float;

// The ranks of these tests share one node; only a missing or full /dev/shm keeps the block away.
constexpr const char* kNoSharedMemory = "no shared memory to be had on this node (/dev/shm too small or missing)";
using testing::small_int;

MpiTuning with_shared_memory(std::size_t bytes) {
  MpiTuning tuning;
  tuning.shared_memory_bytes = bytes;
  return tuning;
}

CommOptions watched() {
  CommOptions options;
  options.watchdog_timeout = std::chrono::seconds(60);  // a wait that never ends fails the test loudly
  return options;
}

// Busy for `delay` (a sleep would hand the core to a peer that is about to wait for this rank).
void late_by(std::chrono::microseconds delay) {
  const auto until = std::chrono::steady_clock::now() + delay;
  while (std::chrono::steady_clock::now() < until) {
  }
}

bool comm_rank_is(int rank) { return testing::world_rank() == rank; }

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

class SharedMemoryCollectives : public ::testing::Test {
 protected:
  MpiCommunicator shared_{MPI_COMM_WORLD, watched(), with_shared_memory(std::size_t{1} << 20)};
  MpiCommunicator messages_{MPI_COMM_WORLD, watched(), with_shared_memory(0)};
  int n_ = shared_.size();
  int r_ = shared_.rank();

  void SetUp() override {
    if (shared_.shared_memory_slot_bytes() == 0) GTEST_SKIP() << kNoSharedMemory;
    ASSERT_GE(shared_.shared_memory_slot_bytes(), std::size_t{1} << 20);
    ASSERT_EQ(messages_.shared_memory_slot_bytes(), 0u);
  }
};

TEST_F(SharedMemoryCollectives, GiveTheMessagePathsBitsForInexactValues) {
  const std::size_t counts[] = {1, 3, 1000, 4099, 100003};
  int seed = 1;
  for (const std::size_t count : counts) {
    for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
      ++seed;
      std::vector<float> in(count);
      for (std::size_t i = 0; i < count; ++i) in[i] = messy_float(seed, r_, i);
      const std::string what = "count " + std::to_string(count) + ", " + reduce_op_name(op);

      std::vector<float> a = in, b = in;
      shared_.all_reduce(a, DType::kF32, op).wait();
      messages_.all_reduce(b, DType::kF32, op).wait();
      EXPECT_TRUE(same_bits(a, b)) << "all_reduce f32, " << what;

      for (const DType wire : {DType::kBF16, DType::kF16}) {
        a = in;
        b = in;
        shared_.all_reduce_f32(a, wire, op).wait();
        messages_.all_reduce_f32(b, wire, op).wait();
        EXPECT_TRUE(same_bits(a, b)) << "all_reduce_f32 wire " << dtype_name(wire) << ", " << what;
      }

      std::vector<std::uint16_t> h(count), g(count);
      for (std::size_t i = 0; i < count; ++i) h[i] = f32_to_bf16(in[i]);
      g = h;
      shared_.all_reduce(h, DType::kBF16, op).wait();
      messages_.all_reduce(g, DType::kBF16, op).wait();
      EXPECT_TRUE(same_bits(h, g)) << "all_reduce bf16, " << what;

      // reduce_scatter of count per rank (the input is count * n), plain and on a bf16 wire.
      std::vector<float> big(count * n_);
      for (std::size_t i = 0; i < big.size(); ++i) big[i] = messy_float(seed + 1000, r_, i);
      if (big.size() * sizeof(float) <= shared_.shared_memory_slot_bytes()) {
        std::vector<float> x(count), y(count);
        shared_.reduce_scatter(big, x, DType::kF32, op).wait();
        messages_.reduce_scatter(big, y, DType::kF32, op).wait();
        EXPECT_TRUE(same_bits(x, y)) << "reduce_scatter f32, " << what;
        shared_.reduce_scatter_f32(big, x, DType::kBF16, op).wait();
        messages_.reduce_scatter_f32(big, y, DType::kBF16, op).wait();
        EXPECT_TRUE(same_bits(x, y)) << "reduce_scatter_f32 wire bf16, " << what;
      }
    }
    std::vector<float> x(count * n_), y(count * n_);
    std::vector<float> mine(count);
    for (std::size_t i = 0; i < count; ++i) mine[i] = messy_float(seed, r_, i);
    shared_.all_gather(mine, x, DType::kF32).wait();
    messages_.all_gather(mine, y, DType::kF32).wait();
    EXPECT_TRUE(same_bits(x, y)) << "all_gather, count " << count;
    for (int root = 0; root < n_; ++root) {
      std::vector<float> s = mine, t = mine;
      shared_.broadcast(s, DType::kF32, root).wait();
      messages_.broadcast(t, DType::kF32, root).wait();
      EXPECT_TRUE(same_bits(s, t)) << "broadcast from " << root << ", count " << count;
    }
  }
}

TEST_F(SharedMemoryCollectives, SendNoMessageAndExchangeNoCall) {
  std::vector<float> buf(4096, 1.0f), shard(4096), full(4096 * n_);
  const MpiCounters before = shared_.counters();
  shared_.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();
  shared_.all_reduce_f32(buf, DType::kBF16, ReduceOp::kSum).wait();
  shared_.reduce_scatter(full, shard, DType::kF32, ReduceOp::kSum).wait();
  shared_.all_gather(shard, full, DType::kF32).wait();
  shared_.broadcast(buf, DType::kF32, n_ - 1).wait();
  const MpiCounters after = shared_.counters();
  EXPECT_EQ(after.messages_sent, before.messages_sent);
  EXPECT_EQ(after.call_exchanges, before.call_exchanges) << "the data collectives compare their calls for free";
  EXPECT_EQ(after.collectives - before.collectives, 5u);
}

// Small slots, so that the counts land below, at and above a slot's size: those above agree in
// shared memory, then move by messages. Every call's inputs differ from the last one's, and one rank
// comes late to each round (in turn), so a call that read a slot its peer had not finished
// writing, or that a peer overwrote too early, shows.
TEST(SharedMemorySlots, AreReusedSafelyOverManyCallsOfChangingKindsAndSizes) {
  const std::size_t slot = 4096;
  MpiCommunicator comm(MPI_COMM_WORLD, watched(), with_shared_memory(slot));
  if (comm.shared_memory_slot_bytes() == 0) GTEST_SKIP() << kNoSharedMemory;
  ASSERT_GE(comm.shared_memory_slot_bytes(), slot);
  const int n = comm.size();
  const int r = comm.rank();
  const std::size_t slot_floats = comm.shared_memory_slot_bytes() / sizeof(float);
  const std::size_t counts[] = {1, 7, slot_floats / 2, slot_floats - 1, slot_floats, slot_floats + 1, 3 * slot_floats};
  int seed = 0;
  for (int round = 0; round < 60; ++round) {
    for (const std::size_t count : counts) {
      ++seed;
      if (r == round % n) late_by(std::chrono::microseconds(20 * (seed % 4)));
      std::vector<float> buf(count);
      for (std::size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(small_int(seed, r, i));
      comm.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(buf[i], testing::small_int_sum(seed, n, i)) << "all_reduce, count " << count << ", round " << round;
      }

      const std::size_t per_rank = std::max<std::size_t>(1, count / static_cast<std::size_t>(n));
      std::vector<float> in(per_rank * n), out(per_rank);
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(small_int(seed + 7, r, i));
      comm.reduce_scatter(in, out, DType::kF32, ReduceOp::kSum).wait();
      for (std::size_t i = 0; i < per_rank; ++i) {
        ASSERT_EQ(out[i], testing::small_int_sum(seed + 7, n, per_rank * r + i))
            << "reduce_scatter, count " << per_rank << ", round " << round;
      }

      std::vector<float> mine(per_rank), all(per_rank * n);
      for (std::size_t i = 0; i < per_rank; ++i) mine[i] = static_cast<float>(small_int(seed + 13, r, i));
      comm.all_gather(mine, all, DType::kF32).wait();
      for (int p = 0; p < n; ++p) {
        for (std::size_t i = 0; i < per_rank; ++i) {
          ASSERT_EQ(all[p * per_rank + i], static_cast<float>(small_int(seed + 13, p, i)))
              << "all_gather from rank " << p << ", count " << per_rank << ", round " << round;
        }
      }
      if (round % 8 == 0) comm.barrier().wait();
    }
  }
}

TEST(SharedMemoryBlock, LeavesNoNameBehind) {
  int pid0 = static_cast<int>(getpid());
  MPI_Bcast(&pid0, 1, MPI_INT, 0, MPI_COMM_WORLD);
  {
    MpiCommunicator comm(MPI_COMM_WORLD, watched(), with_shared_memory(std::size_t{1} << 20));
    if (comm.shared_memory_slot_bytes() == 0) GTEST_SKIP() << kNoSharedMemory;
    comm.barrier().wait();
    // Every rank has the block mapped; its name is gone already.
    const std::string prefix = "tessera-" + std::to_string(pid0) + "-";
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
      EXPECT_NE(entry.path().filename().string().rfind(prefix, 0), 0u) << "left behind: " << entry.path();
    }
    std::vector<float> buf(1000, 1.0f);
    comm.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();
    EXPECT_EQ(buf[999], static_cast<float>(comm.size()));
  }
}

TEST(SharedMemoryBlock, TurnedOffOnOneRankIsOffOnAll) {
  // Rank 1 asks for no shared memory, the others for some: every rank takes messages, none waits.
  MpiCommunicator comm(MPI_COMM_WORLD, watched(), with_shared_memory(comm_rank_is(1) ? 0 : std::size_t{1} << 20));
  EXPECT_EQ(comm.shared_memory_slot_bytes(), 0u);
  std::vector<float> buf(100);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(small_int(5, comm.rank(), i));
  comm.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();
  for (std::size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], testing::small_int_sum(5, comm.size(), i)) << i;
}

TEST(SharedMemoryBlock, ThatCannotBeHadLeavesEveryRankOnMessages) {
  // A petabyte per rank: more than /dev/shm holds, so reserving it fails on rank 0, and every rank
  // goes on with messages.
  MpiCommunicator comm(MPI_COMM_WORLD, watched(), with_shared_memory(std::size_t{1} << 50));
  EXPECT_EQ(comm.shared_memory_slot_bytes(), 0u);
  const int n = comm.size();
  std::vector<float> buf(5000);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(small_int(3, comm.rank(), i));
  const MpiCounters before = comm.counters();
  comm.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();
  EXPECT_GT(comm.counters().messages_sent, before.messages_sent);
  for (std::size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], testing::small_int_sum(3, n, i)) << i;
}

}  // namespace
}  // namespace tessera
