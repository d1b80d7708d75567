// The MPI communicator's call check, with and without debug mode, by messages
// (comm/mpi/call_check.hpp) and through shared memory (comm/mpi/shared_memory_collectives.hpp):
// matching calls send their data and nothing else (counted by the communicator; through shared
// memory, no message at all), and calls that differ in count, dtype, op, root or collective — small
// or large enough to be pipelined, on one rank or on several — make every rank throw
// CollectiveMismatchError naming both calls and what differs, without writing past the caller's
// buffers and without hanging.
// tessera-test-ranks: 2 3
// tessera-test-timeout: 120
#include "tessera/comm/mpi/call_check.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tests/comm/comm_test_support.hpp"

namespace tessera {
namespace {

using testing::mismatch_message;

using testing::small_int;

// A check mode, and whether the collectives run through shared memory (the ranks of these tests
// share one node) or by messages only.
struct CheckSetting {
  CollectiveCheck check = CollectiveCheck::kOff;
  bool shared_memory = false;
};

std::string setting_name(const ::testing::TestParamInfo<CheckSetting>& info) {
  return std::string(info.param.check == CollectiveCheck::kOff ? "CheckOff" : "MatchCalls") +
         (info.param.shared_memory ? "SharedMemory" : "Messages");
}

const auto kAllSettings =
    ::testing::Values(CheckSetting{CollectiveCheck::kOff, false}, CheckSetting{CollectiveCheck::kMatchCalls, false},
                      CheckSetting{CollectiveCheck::kOff, true}, CheckSetting{CollectiveCheck::kMatchCalls, true});

CommOptions options_with(CollectiveCheck check) {
  CommOptions options;
  options.check = check;
  options.watchdog_timeout = std::chrono::seconds(60);  // a check that hangs ends the test, loudly
  return options;
}

MpiTuning tuning_for(const CheckSetting& setting, std::size_t segment_bytes = MpiTuning{}.segment_bytes) {
  MpiTuning tuning(segment_bytes);
  if (!setting.shared_memory) tuning.shared_memory_bytes = 0;
  return tuning;
}

// The communicator of one test case; a mismatch leaves its communicator refusing further
// collectives, so each case makes its own.
MpiCommunicator make_comm(const CheckSetting& setting, std::size_t segment_bytes = MpiTuning{}.segment_bytes) {
  return MpiCommunicator(MPI_COMM_WORLD, options_with(setting.check), tuning_for(setting, segment_bytes));
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos)
      << "rank " << testing::world_rank() << ": message lacks \"" << part << "\": " << text;
}

bool odd_one() { return testing::world_rank() == 1; }

TEST(CallTag, EveryFieldChangesTheTagWhichStaysInRange) {
  const CollectiveCall base =
      make_collective_call(CollectiveKind::kAllReduce, 7, 1000, DType::kF32, ReduceOp::kSum, -1);
  const std::vector<CollectiveCall> others = {
      make_collective_call(CollectiveKind::kAllReduce, 8, 1000, DType::kF32, ReduceOp::kSum, -1),
      make_collective_call(CollectiveKind::kAllReduce, 7, 1001, DType::kF32, ReduceOp::kSum, -1),
      make_collective_call(CollectiveKind::kAllReduce, 7, 1000, DType::kBF16, ReduceOp::kSum, -1),
      make_collective_call(CollectiveKind::kAllReduce, 7, 1000, DType::kF32, ReduceOp::kMax, -1),
      make_collective_call(CollectiveKind::kAllReduceF32, 7, 1000, DType::kF32, ReduceOp::kSum, -1),
      make_collective_call(CollectiveKind::kBroadcast, 7, 1000, DType::kF32, ReduceOp::kSum, 0),
      make_collective_call(CollectiveKind::kBroadcast, 7, 1000, DType::kF32, ReduceOp::kSum, 1),
  };
  for (const int tag_ub : {32767, 2147483647}) {
    std::set<int> tags{detail::call_tag(base, tag_ub)};
    for (const CollectiveCall& call : others) {
      const int tag = detail::call_tag(call, tag_ub);
      EXPECT_GE(tag, 1) << describe(call);  // 0 is kTagNameCalls
      EXPECT_LE(tag, tag_ub) << describe(call);
      tags.insert(tag);
    }
    EXPECT_EQ(tags.size(), others.size() + 1) << "tag_ub " << tag_ub;
    EXPECT_EQ(detail::call_tag(base, tag_ub), detail::call_tag(base, tag_ub));
  }
}

// The fast path: a matching call costs its data messages and nothing more, in both modes; through
// shared memory it sends no message at all.
class MatchingCalls : public ::testing::TestWithParam<CheckSetting> {};

TEST_P(MatchingCalls, SendOnlyTheirDataAndExchangeNoCalls) {
  MpiCommunicator comm = make_comm(GetParam());
  if (GetParam().shared_memory && comm.shared_memory_slot_bytes() == 0) {
    GTEST_SKIP() << "no shared memory to be had on this node (/dev/shm too small or missing)";
  }
  if (!GetParam().shared_memory) {
    ASSERT_EQ(comm.shared_memory_slot_bytes(), 0u);
  }
  const int n = comm.size();
  const std::size_t peers = static_cast<std::size_t>(n - 1);
  const std::size_t per_rank = 64;  // one pipeline segment, every chunk non-empty
  std::vector<float> buf(per_rank * n), shard(per_rank), full(per_rank * n);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(small_int(3, comm.rank(), i));
  const MpiCounters before = comm.counters();

  comm.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();  // reduce-scatter + all-gather phase
  comm.reduce_scatter(buf, shard, DType::kF32, ReduceOp::kSum).wait();
  comm.all_gather(shard, full, DType::kF32).wait();
  comm.all_reduce_f32(buf, DType::kBF16, ReduceOp::kSum).wait();  // narrowed all-gather phase
  comm.reduce_scatter_f32(buf, shard, DType::kBF16, ReduceOp::kSum).wait();

  const MpiCounters after = comm.counters();
  EXPECT_EQ(after.collectives - before.collectives, 5u);
  EXPECT_EQ(after.call_exchanges, before.call_exchanges) << "a matching data collective exchanged its call";
  const std::size_t messages = GetParam().shared_memory ? 0 : (2 + 1 + 1 + 2 + 1) * peers;
  EXPECT_EQ(after.messages_sent - before.messages_sent, messages)
      << "one message per peer and phase is the data itself; anything more is a check that costs";
  for (std::size_t i = 0; i < per_rank; ++i) {
    float expected = 0.0f;
    for (int r = 0; r < n; ++r) expected += static_cast<float>(small_int(3, r, i));
    ASSERT_EQ(full[i], expected * static_cast<float>(n)) << "index " << i;  // all_reduce, then summed again
  }
}

INSTANTIATE_TEST_SUITE_P(BothModesBothTransports, MatchingCalls, kAllSettings, setting_name);

// Mismatches are caught in both modes; each case gets a fresh communicator, since a mismatch
// leaves its communicator refusing further collectives.
class Mismatch : public ::testing::TestWithParam<CheckSetting> {};

TEST_P(Mismatch, CountOfAllReduce) {
  MpiCommunicator comm = make_comm(GetParam());
  std::vector<float> buf(10 + 64, -7.0f);
  const std::size_t count = odd_one() ? 9 : 10;
  const std::string message =
      mismatch_message([&] { return comm.all_reduce(Span(buf.data(), count), DType::kF32, ReduceOp::kSum); });
  expect_contains(message, "collective mismatch on communicator 'world'");
  expect_contains(message,
                  "rank 0 called #1 all_reduce(count=10, f32, sum) but rank 1 called #1 "
                  "all_reduce(count=9, f32, sum) (different counts)");
  for (std::size_t i = count; i < buf.size(); ++i) ASSERT_EQ(buf[i], -7.0f) << "guard " << i;
  EXPECT_THROW(comm.barrier(), std::runtime_error) << "the communicator must refuse further collectives";
}

TEST_P(Mismatch, DtypeOfAllReduce) {
  MpiCommunicator comm = make_comm(GetParam());
  std::vector<std::uint16_t> buf(256);
  const std::string message =
      mismatch_message([&] { return comm.all_reduce(buf, odd_one() ? DType::kF16 : DType::kBF16, ReduceOp::kSum); });
  expect_contains(message,
                  "all_reduce(count=256, bf16, sum) but rank 1 called #1 all_reduce(count=256, f16, sum) "
                  "(different dtypes)");
}

TEST_P(Mismatch, OpOfReduceScatter) {
  MpiCommunicator comm = make_comm(GetParam());
  const int n = comm.size();
  std::vector<float> in(100 * n, 1.0f), out(100);
  const std::string message = mismatch_message(
      [&] { return comm.reduce_scatter(in, out, DType::kF32, odd_one() ? ReduceOp::kMax : ReduceOp::kAvg); });
  expect_contains(message,
                  "reduce_scatter(count=100, f32, avg) but rank 1 called #1 reduce_scatter(count=100, f32, "
                  "max) (different ops)");
}

TEST_P(Mismatch, CollectiveOfTheSameSize) {
  // all_gather of 32 elements per rank against all_reduce of 32: the first messages have the same
  // size on two ranks; only the tag tells them apart.
  MpiCommunicator comm = make_comm(GetParam());
  const int n = comm.size();
  std::vector<float> mine(32, 1.0f), all(32 * n);
  const std::string message = mismatch_message([&] {
    return odd_one() ? comm.all_gather(mine, all, DType::kF32) : comm.all_reduce(mine, DType::kF32, ReduceOp::kSum);
  });
  expect_contains(message,
                  "rank 0 called #1 all_reduce(count=32, f32, sum) but rank 1 called #1 "
                  "all_gather(count=32, f32) (different collectives)");
}

TEST_P(Mismatch, RootOfBroadcast) {
  MpiCommunicator comm = make_comm(GetParam());
  std::vector<float> buf(4);
  const std::string message = mismatch_message([&] { return comm.broadcast(buf, DType::kF32, odd_one() ? 1 : 0); });
  expect_contains(message,
                  "broadcast(count=4, f32, root=0) but rank 1 called #1 broadcast(count=4, f32, root=1) "
                  "(different roots)");
}

TEST_P(Mismatch, BarrierAgainstAllReduce) {
  MpiCommunicator comm = make_comm(GetParam());
  std::vector<float> buf(8, 1.0f);
  const std::string message =
      mismatch_message([&] { return odd_one() ? comm.all_reduce(buf, DType::kF32, ReduceOp::kSum) : comm.barrier(); });
  expect_contains(message, "rank 0 called #1 barrier() but rank 1 called #1 all_reduce(count=8, f32, sum)");
}

TEST_P(Mismatch, LargeCountsAcrossSegments) {
  // 3 MiB against 2 MiB of f32 with 256 KiB segments: large messages (MPI's rendezvous protocol) and
  // a multi-segment pipeline, on the collective that follows a matching one.
  MpiCommunicator comm = make_comm(GetParam(), 256 * 1024);
  const int n = comm.size();
  std::vector<float> warmup(1000 * n, 1.0f);
  comm.all_reduce(warmup, DType::kF32, ReduceOp::kSum).wait();
  ASSERT_EQ(warmup[0], static_cast<float>(n));
  const std::size_t big = 3 << 18, small = 2 << 18;  // elements
  const std::size_t count = odd_one() ? small : big;
  std::vector<float> buf(big + 64, 1.0f);
  for (std::size_t i = count; i < buf.size(); ++i) buf[i] = -7.0f;
  const std::string message =
      mismatch_message([&] { return comm.all_reduce_f32(Span(buf.data(), count), DType::kBF16, ReduceOp::kSum); });
  expect_contains(message,
                  "rank 0 called #2 all_reduce_f32(count=786432, wire bf16, sum) but rank 1 called #2 "
                  "all_reduce_f32(count=524288, wire bf16, sum) (different counts)");
  for (std::size_t i = count; i < buf.size(); ++i) ASSERT_EQ(buf[i], -7.0f) << "guard " << i;
}

TEST_P(Mismatch, LargeAllGatherAgainstReduceScatter) {
  MpiCommunicator comm = make_comm(GetParam());
  const int n = comm.size();
  const std::size_t per_rank = 300000;  // 1.2 MB per chunk
  std::vector<float> small_in(per_rank), full(per_rank * n + 64, -7.0f), shard(per_rank);
  const std::string message = mismatch_message([&] {
    return odd_one() ? comm.reduce_scatter(ConstSpan(full.data(), per_rank * n), shard, DType::kF32, ReduceOp::kSum)
                     : comm.all_gather(small_in, Span(full.data(), per_rank * n), DType::kF32);
  });
  expect_contains(message,
                  "rank 0 called #1 all_gather(count=300000, f32) but rank 1 called #1 "
                  "reduce_scatter(count=300000, f32, sum) (different collectives)");
  for (std::size_t i = per_rank * n; i < full.size(); ++i) ASSERT_EQ(full[i], -7.0f) << "guard " << i;
}

INSTANTIATE_TEST_SUITE_P(BothModesBothTransports, Mismatch, kAllSettings, setting_name);

}  // namespace
}  // namespace tessera
