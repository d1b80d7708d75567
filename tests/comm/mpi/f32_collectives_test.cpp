// all_reduce_f32 and reduce_scatter_f32 of the MPI communicator: f32 buffers travelling as bf16, f16
// or f32 give, bit for bit, what converting the input to the wire dtype, the collective in that
// dtype and widening the output give — on inexact inputs (full f32 mantissas, so every rank's own
// values really are rounded), for every op, counts that do and do not divide by the rank count, in
// place and out of place, and segments small enough that a buffer crosses many of them.
// reduce_scatter_f32 followed by all_gather (in the wire dtype, widened) equals all_reduce_f32.
// tessera-test-ranks: 1 2 3 4
#include <gtest/gtest.h>
#include <mpi.h>

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
using testing::messy_float;

constexpr DType kWires[] = {DType::kBF16, DType::kF16, DType::kF32};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax};

// Rank `rank`'s f32 input: full-mantissa values, a few special ones (zeros of both signs, values
// that overflow f16, f16 subnormals, a tie that rounds to even) mixed in.
float input(int seed, int rank, std::size_t i) {
  switch ((i + static_cast<std::size_t>(rank)) % 53) {
    case 3: return -0.0f;
    case 11: return 70000.0f;              // beyond f16's range: inf on that wire
    case 19: return 3.0e-6f * (1 + rank);  // an f16 subnormal
    case 29: return 1.0f + 1.0f / 256.0f;  // halfway between two bf16 values
    default: return messy_float(seed, rank, i);
  }
}

DTypeBuffer f32_input(int seed, int rank, std::size_t count) {
  DTypeBuffer b(DType::kF32, count);
  for (std::size_t i = 0; i < count; ++i) b.set(i, input(seed, rank, i));
  return b;
}

// The reference: narrow to `wire`, the plain collective in `wire`, widen.
DTypeBuffer widened(const DTypeBuffer& wire_values) {
  DTypeBuffer out(DType::kF32, wire_values.count());
  for (std::size_t i = 0; i < out.count(); ++i) out.set(i, wire_values.get(i));
  return out;
}

DTypeBuffer narrowed(const DTypeBuffer& f32, DType wire) {
  DTypeBuffer out(wire, f32.count());
  for (std::size_t i = 0; i < out.count(); ++i) out.set(i, f32.get(i));
  return out;
}

std::string wire_label(const char* what, DType wire, ReduceOp op, std::size_t count,
                  const testing::MpiTransport& transport) {
  return std::string(what) + "(wire " + dtype_name(wire) + ", " + reduce_op_name(op) + ", count " +
         std::to_string(count) + ", " + transport.name + ")";
}

class MpiF32Collectives : public ::testing::TestWithParam<testing::MpiTransport> {
 protected:
  MpiCommunicator comm_{MPI_COMM_WORLD, CommOptions{}, GetParam().tuning()};
  int n_ = comm_.size();
  int r_ = comm_.rank();
  std::vector<std::size_t> counts_{0, 1, 7, 1001, 4099};
};

TEST_P(MpiF32Collectives, AllReduceEqualsTheCollectiveInTheWireDType) {
  int seed = 1;
  for (DType wire : kWires) {
    for (ReduceOp op : kOps) {
      for (std::size_t count : counts_) {
        ++seed;
        DTypeBuffer buf = f32_input(seed, r_, count);
        DTypeBuffer reference = narrowed(buf, wire);
        comm_.all_reduce(Span(reference.data(), count), wire, op).wait();
        comm_.all_reduce_f32(Span(buf.data(), count), wire, op).wait();
        const std::string error =
            compare_exact(buf, widened(reference), wire_label("all_reduce_f32", wire, op, count, GetParam()));
        EXPECT_TRUE(error.empty()) << error;
      }
    }
  }
}

TEST_P(MpiF32Collectives, ReduceScatterEqualsTheCollectiveInTheWireDType) {
  int seed = 100;
  for (DType wire : kWires) {
    for (ReduceOp op : kOps) {
      for (std::size_t count : counts_) {  // per rank
        ++seed;
        const std::size_t total = count * static_cast<std::size_t>(n_);
        const DTypeBuffer in = f32_input(seed, r_, total);
        DTypeBuffer out(DType::kF32, count), reference(wire, count);
        out.fill_pattern(std::byte{0x7f});
        const DTypeBuffer wire_in = narrowed(in, wire);
        comm_.reduce_scatter(ConstSpan(wire_in.data(), total), Span(reference.data(), count), wire, op).wait();
        comm_.reduce_scatter_f32(ConstSpan(in.data(), total), Span(out.data(), count), wire, op).wait();
        const std::string error =
            compare_exact(out, widened(reference), wire_label("reduce_scatter_f32", wire, op, count, GetParam()));
        EXPECT_TRUE(error.empty()) << error;
      }
    }
  }
}

TEST_P(MpiF32Collectives, ReduceScatterInPlace) {
  for (DType wire : kWires) {
    const std::size_t count = 2053;
    const std::size_t total = count * static_cast<std::size_t>(n_);
    DTypeBuffer buf = f32_input(7, r_, total), reference(wire, count);
    const DTypeBuffer wire_in = narrowed(buf, wire);
    comm_.reduce_scatter(ConstSpan(wire_in.data(), total), Span(reference.data(), count), wire, ReduceOp::kAvg).wait();
    const std::size_t offset = static_cast<std::size_t>(r_) * count;
    comm_.reduce_scatter_f32(ConstSpan(buf.data(), total), Span(buf.at(offset), count), wire, ReduceOp::kAvg).wait();
    DTypeBuffer out(DType::kF32, count);
    std::memcpy(out.data(), buf.at(offset), count * sizeof(float));
    const std::string error = compare_exact(
        out, widened(reference), wire_label("in-place reduce_scatter_f32", wire, ReduceOp::kAvg, count, GetParam()));
    EXPECT_TRUE(error.empty()) << error;
  }
}

TEST_P(MpiF32Collectives, ReduceScatterThenAllGatherEqualsAllReduceBitForBit) {
  for (DType wire : kWires) {
    const std::size_t per_rank = 1237;
    const std::size_t total = per_rank * static_cast<std::size_t>(n_);
    const DTypeBuffer original = f32_input(21, r_, total);
    DTypeBuffer reduced = original;
    comm_.all_reduce_f32(Span(reduced.data(), total), wire, ReduceOp::kAvg).wait();
    DTypeBuffer shard(DType::kF32, per_rank);
    comm_.reduce_scatter_f32(ConstSpan(original.data(), total), Span(shard.data(), per_rank), wire, ReduceOp::kAvg)
        .wait();
    const DTypeBuffer wire_shard = narrowed(shard, wire);  // exact: the shard holds wire values
    DTypeBuffer gathered(wire, total);
    comm_.all_gather(ConstSpan(wire_shard.data(), per_rank), Span(gathered.data(), total), wire).wait();
    const std::string error =
        compare_exact(widened(gathered), reduced,
                      std::string("reduce_scatter_f32 + all_gather vs all_reduce_f32, wire ") + dtype_name(wire));
    EXPECT_TRUE(error.empty()) << error;
  }
}

// 1 + k * (3 * 2^-10): rounding each partial sum to bf16 would stay at 1.0, rounding once gives
// 1 + 2^-7 for k >= 2 — and rank 0's 1 + 2^-9 itself rounds to 1 before it is summed.
TEST_P(MpiF32Collectives, Bf16WireRoundsEachInputAndTheSumOnce) {
  const float small = 3.0f / 1024.0f;
  std::vector<float> buf(16, r_ == 0 ? 1.0f + 1.0f / 512.0f : small);
  comm_.all_reduce_f32(buf, DType::kBF16, ReduceOp::kSum).wait();
  const float expected = n_ >= 3 ? 1.0f + 1.0f / 128.0f : 1.0f;
  for (std::size_t i = 0; i < buf.size(); ++i) {
    ASSERT_EQ(buf[i], expected) << "rank " << r_ << " of " << n_ << ", index " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, MpiF32Collectives, testing::all_mpi_transports(256), testing::mpi_transport_name);

TEST(MpiF32CollectiveArgs, RefusedCallsThrowAtTheCallAndIssueNothing) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  std::vector<float> buf(8), in(10 * n + 1), out(10);
  EXPECT_THROW(comm.all_reduce_f32(buf, DType::kI32, ReduceOp::kSum), std::invalid_argument);
  EXPECT_THROW(comm.reduce_scatter_f32(in, out, DType::kBF16, ReduceOp::kSum), std::invalid_argument);
  EXPECT_THROW(comm.all_reduce_f32(Span(nullptr, 4), DType::kBF16, ReduceOp::kSum), std::invalid_argument);
  try {
    comm.reduce_scatter_f32(ConstSpan(in.data(), 10 * n), Span(out.data(), 10), DType::kU8, ReduceOp::kAvg);
    ADD_FAILURE() << "a u8 wire was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("wire dtype must be f32, bf16 or f16, got u8"), std::string::npos)
        << error.what();
  }
  std::vector<float> one{1.0f};
  comm.all_reduce_f32(one, DType::kBF16, ReduceOp::kSum).wait();
  EXPECT_EQ(one[0], static_cast<float>(n));
}

}  // namespace
}  // namespace tessera
