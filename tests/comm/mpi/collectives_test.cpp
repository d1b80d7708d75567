// Every collective of the MPI communicator, every dtype and op, at 1-4 ranks, with counts that do and
// do not divide by the rank count and that cross pipeline segments. Inputs come from
// (seed, rank, index) as small integers, so every result is exact and known from the formula.
// tessera-test-ranks: 1 2 3 4
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tests/comm/comm_test_support.hpp"
#include "tests/comm/mpi/mpi_transports.hpp"

namespace tessera {
namespace {

using testing::compare_exact;
using testing::DTypeBuffer;
using testing::small_int;

constexpr DType kAllDTypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kI32};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax};

bool supported(DType dtype, ReduceOp op) { return op != ReduceOp::kAvg || is_floating(dtype); }

// The exact reduction of small_int over ranks 0..n-1 at index i, in f32 (then rounded by the buffer).
float expected_reduction(int seed, int n, std::size_t i, ReduceOp op) {
  int sum = 0;
  int max = -1000;
  for (int r = 0; r < n; ++r) {
    sum += small_int(seed, r, i);
    max = std::max(max, small_int(seed, r, i));
  }
  if (op == ReduceOp::kMax) return static_cast<float>(max);
  if (op == ReduceOp::kAvg) return static_cast<float>(sum) / static_cast<float>(n);
  return static_cast<float>(sum);
}

std::string label(const char* what, DType dtype, ReduceOp op, std::size_t count,
                  const testing::MpiTransport& transport) {
  return std::string(what) + "(" + dtype_name(dtype) + ", " + reduce_op_name(op) + ", count " + std::to_string(count) +
         ", " + transport.name + ")";
}

// Default pipeline segments, and tiny ones so that small counts run through many segments.
class MpiCollectives : public ::testing::TestWithParam<testing::MpiTransport> {
 protected:
  MpiCommunicator comm_{MPI_COMM_WORLD, CommOptions{}, GetParam().tuning()};
  int n_ = comm_.size();
  int r_ = comm_.rank();
  std::vector<std::size_t> counts_{0, 1, 5, 7, 64, 1001, 4099};
};

TEST_P(MpiCollectives, AllReduceEveryDTypeAndOp) {
  int seed = 1;
  for (DType dtype : kAllDTypes) {
    for (ReduceOp op : kAllOps) {
      if (!supported(dtype, op)) continue;
      for (std::size_t count : counts_) {
        ++seed;
        DTypeBuffer buf(dtype, count), expected(dtype, count);
        for (std::size_t i = 0; i < count; ++i) {
          buf.set(i, static_cast<float>(small_int(seed, r_, i)));
          expected.set(i, expected_reduction(seed, n_, i, op));
        }
        comm_.all_reduce(Span(buf.data(), count), dtype, op).wait();
        const std::string error = compare_exact(buf, expected, label("all_reduce", dtype, op, count, GetParam()));
        EXPECT_TRUE(error.empty()) << error;
      }
    }
  }
}

TEST_P(MpiCollectives, ReduceScatterEveryDTypeAndOp) {
  int seed = 100;
  for (DType dtype : kAllDTypes) {
    for (ReduceOp op : kAllOps) {
      if (!supported(dtype, op)) continue;
      for (std::size_t count : counts_) {  // per-rank count
        ++seed;
        const std::size_t total = count * static_cast<std::size_t>(n_);
        DTypeBuffer in(dtype, total), out(dtype, count), expected(dtype, count);
        for (std::size_t i = 0; i < total; ++i) in.set(i, static_cast<float>(small_int(seed, r_, i)));
        for (std::size_t i = 0; i < count; ++i) {
          expected.set(i, expected_reduction(seed, n_, static_cast<std::size_t>(r_) * count + i, op));
        }
        comm_.reduce_scatter(ConstSpan(in.data(), total), Span(out.data(), count), dtype, op).wait();
        const std::string error = compare_exact(out, expected, label("reduce_scatter", dtype, op, count, GetParam()));
        EXPECT_TRUE(error.empty()) << error;
      }
    }
  }
}

TEST_P(MpiCollectives, ReduceScatterInPlace) {
  const std::size_t count = 1001;
  const std::size_t total = count * static_cast<std::size_t>(n_);
  DTypeBuffer buf(DType::kBF16, total), expected(DType::kBF16, count);
  for (std::size_t i = 0; i < total; ++i) buf.set(i, static_cast<float>(small_int(7, r_, i)));
  const std::size_t offset = static_cast<std::size_t>(r_) * count;
  for (std::size_t i = 0; i < count; ++i) expected.set(i, expected_reduction(7, n_, offset + i, ReduceOp::kSum));
  comm_.reduce_scatter(ConstSpan(buf.data(), total), Span(buf.at(offset), count), DType::kBF16, ReduceOp::kSum).wait();
  DTypeBuffer out(DType::kBF16, count);
  std::memcpy(out.data(), buf.at(offset), count * 2);
  const std::string error = compare_exact(out, expected, "in-place reduce_scatter");
  EXPECT_TRUE(error.empty()) << error;
}

TEST_P(MpiCollectives, AllGatherEveryDType) {
  int seed = 200;
  for (DType dtype : kAllDTypes) {
    for (std::size_t count : counts_) {
      ++seed;
      const std::size_t total = count * static_cast<std::size_t>(n_);
      DTypeBuffer in(dtype, count), out(dtype, total), expected(dtype, total);
      for (std::size_t i = 0; i < count; ++i) in.set(i, static_cast<float>(small_int(seed, r_, i)));
      for (int p = 0; p < n_; ++p) {
        for (std::size_t i = 0; i < count; ++i) {
          expected.set(static_cast<std::size_t>(p) * count + i, static_cast<float>(small_int(seed, p, i)));
        }
      }
      comm_.all_gather(ConstSpan(in.data(), count), Span(out.data(), total), dtype).wait();
      const std::string error =
          compare_exact(out, expected, label("all_gather", dtype, ReduceOp::kSum, count, GetParam()));
      EXPECT_TRUE(error.empty()) << error;
    }
  }
}

TEST_P(MpiCollectives, AllGatherInPlace) {
  const std::size_t count = 777;
  const std::size_t total = count * static_cast<std::size_t>(n_);
  DTypeBuffer buf(DType::kF16, total), expected(DType::kF16, total);
  buf.fill_pattern(std::byte{0x7f});
  for (std::size_t i = 0; i < count; ++i)
    buf.set(static_cast<std::size_t>(r_) * count + i, static_cast<float>(small_int(9, r_, i)));
  for (int p = 0; p < n_; ++p) {
    for (std::size_t i = 0; i < count; ++i)
      expected.set(static_cast<std::size_t>(p) * count + i, static_cast<float>(small_int(9, p, i)));
  }
  comm_.all_gather(ConstSpan(buf.at(static_cast<std::size_t>(r_) * count), count), Span(buf.data(), total), DType::kF16)
      .wait();
  const std::string error = compare_exact(buf, expected, "in-place all_gather");
  EXPECT_TRUE(error.empty()) << error;
}

TEST_P(MpiCollectives, BroadcastFromEveryRoot) {
  for (DType dtype : kAllDTypes) {
    for (int root = 0; root < n_; ++root) {
      const std::size_t count = 3001;
      DTypeBuffer buf(dtype, count), expected(dtype, count);
      for (std::size_t i = 0; i < count; ++i) {
        buf.set(i, static_cast<float>(small_int(300 + root, r_, i)));
        expected.set(i, static_cast<float>(small_int(300 + root, root, i)));
      }
      comm_.broadcast(Span(buf.data(), count), dtype, root).wait();
      const std::string error =
          compare_exact(buf, expected, std::string("broadcast(root ") + std::to_string(root) + ")");
      EXPECT_TRUE(error.empty()) << error;
    }
  }
}

TEST_P(MpiCollectives, BarrierCompletes) {
  for (int i = 0; i < 5; ++i) comm_.barrier().wait();
}

INSTANTIATE_TEST_SUITE_P(Transports, MpiCollectives, testing::all_mpi_transports(256), testing::mpi_transport_name);

TEST(MpiCollectiveArgs, WrongCountsAndRootsThrowAtTheCall) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  std::vector<float> in(10 * n + 1), out(10);
  EXPECT_THROW(comm.reduce_scatter(in, out, DType::kF32, ReduceOp::kSum), std::invalid_argument);
  std::vector<float> small(3), gathered(3 * n + 2);
  EXPECT_THROW(comm.all_gather(small, gathered, DType::kF32), std::invalid_argument);
  EXPECT_THROW(comm.broadcast(small, DType::kF32, n), std::invalid_argument);
  EXPECT_THROW(comm.broadcast(small, DType::kF32, -1), std::invalid_argument);
  std::vector<std::int32_t> ints(4);
  EXPECT_THROW(comm.all_reduce(ints, DType::kI32, ReduceOp::kAvg), std::invalid_argument);
  EXPECT_THROW(comm.all_reduce(Span(nullptr, 4), DType::kF32, ReduceOp::kSum), std::invalid_argument);
  // Output overlapping the input at a place other than the in-place slot.
  std::vector<float> both(4 * n + 4);
  if (n > 1) {
    const std::size_t wrong_slot = comm.rank() == 0 ? 1 : 0;
    EXPECT_THROW(comm.reduce_scatter(ConstSpan(both.data(), 4 * n), Span(both.data() + wrong_slot * 4 + 1, 4),
                                     DType::kF32, ReduceOp::kSum),
                 std::invalid_argument);
  }
  try {
    comm.reduce_scatter(in, out, DType::kF32, ReduceOp::kSum);
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("per-rank count"), std::string::npos) << error.what();
  }
  // The refused calls issued nothing: the next collective still matches on every rank.
  std::vector<float> one{1.0f};
  comm.all_reduce(one, DType::kF32, ReduceOp::kSum).wait();
  EXPECT_EQ(one[0], static_cast<float>(n));
}

TEST(MpiCollectiveArgs, ThreadLevelIsChecked) {
  EXPECT_NO_THROW(require_mpi_thread_level());
  EXPECT_STREQ(mpi_thread_level_name(kRequiredMpiThreadLevel), "MPI_THREAD_MULTIPLE");
}

}  // namespace
}  // namespace tessera
