// Host collectives over the MPI communicator at 1-4 ranks: values, spans and structs (sizes that
// are not whole i32 words) all-gathered in rank order, values and strings of 0, 1, 5 and 4097 bytes
// broadcast from every root, and a sum whose result depends on the order of the additions, which
// must equal the left-to-right sum in rank order, bit for bit, on every rank.
// tessera-test-ranks: 1 2 3 4
#include "tessera/comm/host_collectives.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"

namespace tessera {
namespace {

// 7 bytes: the last i32 word is padded.
struct Tagged {
  std::uint8_t tag;
  std::array<char, 6> text;
};
static_assert(sizeof(Tagged) == 7);

struct Mixed {
  std::int32_t id;
  double value;
  std::int64_t big;
};

Tagged tagged_of(int rank) {
  Tagged t{};
  t.tag = static_cast<std::uint8_t>(200 + rank);
  for (std::size_t i = 0; i < t.text.size(); ++i) t.text[i] = static_cast<char>('a' + rank + static_cast<int>(i));
  return t;
}

Mixed mixed_of(int rank) {
  return Mixed{-rank - 1, 0.25 * rank + 1.0 / 3.0, (std::int64_t{1} << 40) * (rank + 1) + rank};
}

// A text of `length` bytes that depends on the root (so a wrong root shows).
std::string text_of(int root, std::size_t length) {
  std::string text(length, '\0');
  for (std::size_t i = 0; i < length; ++i)
    text[i] = static_cast<char>('A' + (i * 7 + static_cast<std::size_t>(root) * 3) % 26);
  return text;
}

class HostCollectives : public ::testing::Test {
 protected:
  MpiCommunicator comm_{MPI_COMM_WORLD};
  int n_ = comm_.size();
  int r_ = comm_.rank();
};

TEST_F(HostCollectives, AllGatherValuesInRankOrder) {
  const std::vector<std::int32_t> ints = all_gather_values<std::int32_t>(comm_, 10 * r_ + 7);
  ASSERT_EQ(ints.size(), static_cast<std::size_t>(n_));
  for (int p = 0; p < n_; ++p) EXPECT_EQ(ints[p], 10 * p + 7) << "slot " << p << " on rank " << r_;

  const std::int64_t mine = (std::int64_t{1} << 40) * (r_ + 1) - r_;  // does not fit an i32
  const std::vector<std::int64_t> wide = all_gather_values(comm_, mine);
  for (int p = 0; p < n_; ++p) {
    EXPECT_EQ(wide[p], (std::int64_t{1} << 40) * (p + 1) - p) << "slot " << p << " on rank " << r_;
  }
}

TEST_F(HostCollectives, AllGatherStructsOfOddSizes) {
  const std::vector<Tagged> tagged = all_gather_values(comm_, tagged_of(r_));
  const std::vector<Mixed> mixed = all_gather_values(comm_, mixed_of(r_));
  for (int p = 0; p < n_; ++p) {
    const Tagged expected = tagged_of(p);
    EXPECT_EQ(tagged[p].tag, expected.tag) << "slot " << p << " on rank " << r_;
    EXPECT_EQ(std::string(tagged[p].text.data(), 6), std::string(expected.text.data(), 6))
        << "slot " << p << " on rank " << r_;
    EXPECT_EQ(mixed[p].id, mixed_of(p).id) << "slot " << p << " on rank " << r_;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(mixed[p].value), std::bit_cast<std::uint64_t>(mixed_of(p).value))
        << "slot " << p << " on rank " << r_ << ": expected " << mixed_of(p).value << " actual " << mixed[p].value;
    EXPECT_EQ(mixed[p].big, mixed_of(p).big) << "slot " << p << " on rank " << r_;
  }
}

TEST_F(HostCollectives, AllGatherSpans) {
  const std::array<std::int16_t, 3> mine = {static_cast<std::int16_t>(r_), static_cast<std::int16_t>(r_ * r_),
                                            static_cast<std::int16_t>(-r_)};
  const std::vector<std::int16_t> all = all_gather_values(comm_, std::span<const std::int16_t>(mine));
  ASSERT_EQ(all.size(), 3 * static_cast<std::size_t>(n_));
  for (int p = 0; p < n_; ++p) {
    EXPECT_EQ(all[3 * p], p) << "slot " << p << " on rank " << r_;
    EXPECT_EQ(all[3 * p + 1], p * p) << "slot " << p << " on rank " << r_;
    EXPECT_EQ(all[3 * p + 2], -p) << "slot " << p << " on rank " << r_;
  }
  EXPECT_TRUE(all_gather_values(comm_, std::span<const std::int16_t>()).empty());
}

TEST_F(HostCollectives, BroadcastValueFromEveryRoot) {
  for (int root = 0; root < n_; ++root) {
    const Mixed got = broadcast_value(comm_, mixed_of(r_), root);
    EXPECT_EQ(got.id, mixed_of(root).id) << "root " << root << " on rank " << r_;
    EXPECT_EQ(got.value, mixed_of(root).value) << "root " << root << " on rank " << r_;
    EXPECT_EQ(got.big, mixed_of(root).big) << "root " << root << " on rank " << r_;
    const Tagged tagged = broadcast_value(comm_, tagged_of(r_), root);
    EXPECT_EQ(tagged.tag, tagged_of(root).tag) << "root " << root << " on rank " << r_;
  }
}

TEST_F(HostCollectives, BroadcastStringsOfEveryLength) {
  for (const std::size_t length : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{4097}}) {
    for (int root = 0; root < n_; ++root) {
      // Other ranks pass a text of another length, which must be ignored.
      const std::string mine = r_ == root ? text_of(root, length) : std::string(length + 3 + r_, '?');
      const std::string got = broadcast_string(comm_, mine, root);
      const std::string expected = text_of(root, length);
      EXPECT_EQ(got.size(), length) << "root " << root << " on rank " << r_;
      EXPECT_TRUE(got == expected) << "length " << length << ", root " << root << " on rank " << r_ << ": expected '"
                                   << expected.substr(0, 40) << "' actual '" << got.substr(0, 40) << "'";
    }
  }
}

TEST_F(HostCollectives, SumIsTheLeftToRightSumInRankOrder) {
  // 1e16 + 1 rounds back to 1e16 (the spacing there is 2), so the order decides the result:
  // left to right gives 1e16, 1e16, 0, 1 for 1-4 ranks, while the exact sums are 1e16, 1e16+1, 1, 2.
  constexpr double kPattern[] = {1e16, 1.0, -1e16, 1.0};
  constexpr double kExpected[] = {1e16, 1e16, 0.0, 1.0};
  const double sum = sum_in_rank_order(comm_, kPattern[r_ % 4]);
  double left_to_right = 0.0;
  for (int p = 0; p < n_; ++p) left_to_right += kPattern[p % 4];
  EXPECT_EQ(std::bit_cast<std::uint64_t>(sum), std::bit_cast<std::uint64_t>(left_to_right))
      << "rank " << r_ << " of " << n_ << ": expected " << left_to_right << " actual " << sum;
  if (n_ <= 4) {
    EXPECT_EQ(sum, kExpected[n_ - 1]) << "rank " << r_ << " of " << n_;
  }

  // Every rank holds the same bits, also for a sum with rounding in every step.
  const double messy = sum_in_rank_order(comm_, 0.1 * (r_ + 1) + 1.0 / 3.0);
  const std::vector<std::uint64_t> bits = all_gather_values(comm_, std::bit_cast<std::uint64_t>(messy));
  for (int p = 0; p < n_; ++p) {
    EXPECT_EQ(bits[p], bits[0]) << "rank " << p << " got " << std::bit_cast<double>(bits[p]) << ", rank 0 got "
                                << std::bit_cast<double>(bits[0]);
  }
}

}  // namespace
}  // namespace tessera
