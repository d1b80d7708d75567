// Determinism and rounding of the MPI communicator on inexact inputs: every reduced element is the
// f32 sum x_0 + x_1 + ... + x_{N-1} in rank order (checked bit for bit against that formula),
// reduce_scatter + all_gather gives exactly what all_reduce gives, repeated runs are bit-identical,
// and bf16/f16 are summed in f32 and rounded once (within one rounding of the exact sum).
// tessera-test-ranks: 1 2 3 4
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tests/comm/comm_test_support.hpp"
#include "tests/comm/mpi/mpi_transports.hpp"

namespace tessera {
namespace {

using testing::compare_exact;
using testing::DTypeBuffer;
using testing::messy_float;

constexpr DType kFloatDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

// Rank r's input at index i, already rounded to the dtype (as the rank holds it).
float input(DType dtype, int seed, int rank, std::size_t i) {
  DTypeBuffer one(dtype, 1);
  one.set(0, messy_float(seed, rank, i));
  return one.get(0);
}

// The documented formula: left-to-right f32 sum in rank order, then avg divides, then one rounding.
float ordered_f32(DType dtype, int seed, int n, std::size_t i, ReduceOp op) {
  float acc = input(dtype, seed, 0, i);
  for (int r = 1; r < n; ++r) acc += input(dtype, seed, r, i);
  if (op == ReduceOp::kAvg) acc /= static_cast<float>(n);
  return acc;
}

class MpiDeterminism : public ::testing::TestWithParam<testing::MpiTransport> {
 protected:
  MpiCommunicator comm_{MPI_COMM_WORLD, CommOptions{}, GetParam().tuning()};
  int n_ = comm_.size();
  int r_ = comm_.rank();
};

TEST_P(MpiDeterminism, AllReduceIsTheRankOrderedF32Sum) {
  for (DType dtype : kFloatDTypes) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
      const std::size_t count = 5003;
      DTypeBuffer buf(dtype, count), expected(dtype, count);
      for (std::size_t i = 0; i < count; ++i) {
        buf.set(i, input(dtype, 11, r_, i));
        expected.set(i, ordered_f32(dtype, 11, n_, i, op));
      }
      comm_.all_reduce(Span(buf.data(), count), dtype, op).wait();
      const std::string error = compare_exact(buf, expected, std::string("all_reduce ") + reduce_op_name(op));
      EXPECT_TRUE(error.empty()) << error;
    }
  }
}

TEST_P(MpiDeterminism, ReduceScatterThenAllGatherEqualsAllReduceBitForBit) {
  for (DType dtype : kFloatDTypes) {
    const std::size_t per_rank = 1237;
    const std::size_t total = per_rank * static_cast<std::size_t>(n_);
    DTypeBuffer reduced(dtype, total), shard(dtype, per_rank), gathered(dtype, total);
    DTypeBuffer original(dtype, total);
    for (std::size_t i = 0; i < total; ++i) original.set(i, input(dtype, 21, r_, i));
    std::memcpy(reduced.data(), original.data(), total * dtype_size(dtype));
    comm_.all_reduce(Span(reduced.data(), total), dtype, ReduceOp::kSum).wait();
    comm_.reduce_scatter(ConstSpan(original.data(), total), Span(shard.data(), per_rank), dtype, ReduceOp::kSum).wait();
    comm_.all_gather(ConstSpan(shard.data(), per_rank), Span(gathered.data(), total), dtype).wait();
    const std::string error = compare_exact(gathered, reduced, "reduce_scatter + all_gather vs all_reduce");
    EXPECT_TRUE(error.empty()) << error;
  }
}

TEST_P(MpiDeterminism, RepeatedRunsAreBitIdentical) {
  const std::size_t count = 20011;
  DTypeBuffer first(DType::kF32, count), again(DType::kF32, count);
  for (int round = 0; round < 3; ++round) {
    DTypeBuffer& buf = round == 0 ? first : again;
    for (std::size_t i = 0; i < count; ++i) buf.set(i, messy_float(31, r_, i));
    comm_.all_reduce(Span(buf.data(), count), DType::kF32, ReduceOp::kSum).wait();
    if (round > 0) {
      const std::string error = compare_exact(again, first, "repeated all_reduce");
      EXPECT_TRUE(error.empty()) << error;
    }
  }
}

TEST_P(MpiDeterminism, HalfPrecisionIsWithinOneRoundingOfTheExactSum) {
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const std::size_t count = 3001;
    DTypeBuffer buf(dtype, count);
    for (std::size_t i = 0; i < count; ++i) buf.set(i, input(dtype, 41, r_, i));
    comm_.all_reduce(Span(buf.data(), count), dtype, ReduceOp::kSum).wait();
    std::size_t wrong = 0;
    std::string first;
    for (std::size_t i = 0; i < count; ++i) {
      double exact = 0.0;
      for (int r = 0; r < n_; ++r) exact += input(dtype, 41, r, i);
      const double error = std::abs(static_cast<double>(buf.get(i)) - exact);
      if (error <= testing::ulp_at(exact, dtype)) continue;
      if (wrong++ == 0) {
        first =
            "index " + std::to_string(i) + ": exact " + std::to_string(exact) + " actual " + std::to_string(buf.get(i));
      }
    }
    EXPECT_EQ(wrong, 0u) << wrong << " elements off by more than one rounding (rank " << r_ << ", dtype "
                         << dtype_name(dtype) << "); first " << first;
  }
}

// 1 + k * (3 * 2^-10) in bf16: rounding after every partial sum would stay at 1.0 (each step adds
// less than half an ulp), rounding once gives 1 + 2^-7 for k >= 2.
TEST_P(MpiDeterminism, Bf16SumsInF32AndRoundsOnce) {
  const float small = 3.0f / 1024.0f;
  std::vector<std::uint16_t> buf(16, f32_to_bf16(r_ == 0 ? 1.0f : small));
  comm_.all_reduce(buf, DType::kBF16, ReduceOp::kSum).wait();
  const float expected = n_ >= 3 ? 1.0f + 1.0f / 128.0f : 1.0f;
  for (std::size_t i = 0; i < buf.size(); ++i) {
    ASSERT_EQ(bf16_to_f32(buf[i]), expected) << "rank " << r_ << " of " << n_ << ", index " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, MpiDeterminism, testing::all_mpi_transports(512), testing::mpi_transport_name);

}  // namespace
}  // namespace tessera
