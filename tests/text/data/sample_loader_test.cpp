// Tests for SampleLoader and first_sample_index: targets are inputs shifted by one, the order is a
// fixed function of the seed (pinned values guard checkpoint resumption), every window appears once
// per epoch, and any split of the global batch over ranks, micro-batches and accumulation steps
// reads, index for index, the samples of the single-process run.
#include "tessera/text/data/sample_loader.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {
namespace {

namespace fs = std::filesystem;

class SampleLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tessera_sample_loader_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A dataset whose token i is i (so a token says where it came from), split over two files.
  TokenDataset positions(int count) const {
    std::vector<std::int32_t> tokens(count);
    std::iota(tokens.begin(), tokens.end(), 0);
    const int half = count / 2;
    write_token_file((dir_ / "pos_0.bin").string(), std::span(tokens).first(half));
    write_token_file((dir_ / "pos_1.bin").string(), std::span(tokens).subspan(half));
    return TokenDataset((dir_ / "pos_*.bin").string());
  }

  fs::path dir_;
};

TEST(ShuffledWindows, PinnedPermutations) {
  // These orders are part of the checkpoint format (a checkpoint stores only seed and sample index):
  // changing the generator, the seeding or the shuffle changes them and breaks exact resumption.
  const std::vector<std::uint32_t> e0 = {2, 8, 9, 7, 1, 4, 6, 0, 5, 3};
  const std::vector<std::uint32_t> e1 = {3, 1, 6, 8, 4, 5, 9, 7, 2, 0};
  EXPECT_EQ(shuffled_windows(10, 42, 0), e0);
  EXPECT_EQ(shuffled_windows(10, 42, 1), e1);
  EXPECT_EQ(shuffled_windows(1, 42, 0), std::vector<std::uint32_t>{0});
}

TEST_F(SampleLoaderTest, TargetsAreInputsShiftedByOne) {
  constexpr int kT = 8;
  const TokenDataset dataset = positions(kT * 25 + 1);
  const SampleLoader loader(dataset, kT, 1234);
  ASSERT_EQ(loader.windows_per_epoch(), 25);
  std::vector<std::int32_t> inputs(kT), targets(kT);
  for (std::int64_t g = 0; g < 60; ++g) {
    loader.sample(g, inputs.data(), targets.data());
    const std::int64_t start = loader.window_of(g) * kT;
    for (int t = 0; t < kT; ++t) {
      ASSERT_EQ(inputs[t], start + t) << "sample " << g << " input " << t;
      ASSERT_EQ(targets[t], start + t + 1) << "sample " << g << " target " << t;
    }
  }
}

TEST_F(SampleLoaderTest, OrderIsFixedBySeed) {
  const TokenDataset dataset = positions(8 * 25 + 5);  // the last 4 tokens fill no window
  const SampleLoader a(dataset, 8, 1234);
  const SampleLoader b(dataset, 8, 1234);
  const SampleLoader c(dataset, 8, 1235);
  ASSERT_EQ(a.windows_per_epoch(), 25);
  // Pinned: epoch 0 of seed 1234 over 25 windows.
  const std::vector<std::int64_t> pinned = {5,  1, 13, 0, 23, 11, 8,  17, 3,  7, 16, 24, 15,
                                            10, 2, 12, 4, 21, 18, 22, 20, 19, 6, 14, 9};
  int differ_seed = 0, differ_epoch = 0;
  for (std::int64_t g = 0; g < 75; ++g) {
    EXPECT_EQ(a.window_of(g), b.window_of(g)) << "same seed, sample " << g;
    if (g < 25) {
      EXPECT_EQ(a.window_of(g), pinned[g]) << "seed 1234, sample " << g;
    }
    differ_seed += a.window_of(g) != c.window_of(g);
    if (g < 25) differ_epoch += a.window_of(g) != a.window_of(g + 25);
  }
  EXPECT_GT(differ_seed, 30) << "seeds 1234 and 1235 give nearly the same order";
  EXPECT_GT(differ_epoch, 10) << "epochs 0 and 1 give nearly the same order";
  // Reading in another order (as another process count would) does not change any sample.
  for (std::int64_t g = 74; g >= 0; --g) EXPECT_EQ(b.window_of(g), a.window_of(g)) << "reverse read, sample " << g;
}

TEST_F(SampleLoaderTest, EachWindowOncePerEpoch) {
  const TokenDataset dataset = positions(16 * 37 + 1);
  const SampleLoader loader(dataset, 16, 99);
  const std::int64_t windows = loader.windows_per_epoch();
  ASSERT_EQ(windows, 37);
  for (std::int64_t epoch = 0; epoch < 4; ++epoch) {
    std::vector<int> count(windows, 0);
    for (std::int64_t j = 0; j < windows; ++j) {
      const std::int64_t g = epoch * windows + j;
      EXPECT_EQ(loader.epoch_of(g), epoch);
      const std::int64_t w = loader.window_of(g);
      ASSERT_GE(w, 0);
      ASSERT_LT(w, windows);
      ++count[w];
    }
    for (std::int64_t w = 0; w < windows; ++w) EXPECT_EQ(count[w], 1) << "epoch " << epoch << " window " << w;
  }
}

TEST_F(SampleLoaderTest, SequentialOrder) {
  const TokenDataset dataset = positions(4 * 10 + 1);
  const SampleLoader loader(dataset, 4, 5, SampleOrder::kSequential);
  for (std::int64_t g = 0; g < 30; ++g) EXPECT_EQ(loader.window_of(g), g % 10) << "sample " << g;
}

TEST_F(SampleLoaderTest, BatchEqualsSamplesAcrossEpochBoundary) {
  constexpr int kT = 4;
  const TokenDataset dataset = positions(kT * 6 + 1);
  const SampleLoader loader(dataset, kT, 3);
  constexpr int kCount = 9;  // samples 4..12 span epochs 0, 1 and 2
  std::vector<std::int32_t> inputs(kCount * kT), targets(kCount * kT);
  loader.batch(4, kCount, inputs.data(), targets.data());
  std::vector<std::int32_t> in(kT), tg(kT);
  for (int i = 0; i < kCount; ++i) {
    loader.sample(4 + i, in.data(), tg.data());
    for (int t = 0; t < kT; ++t) {
      EXPECT_EQ(inputs[i * kT + t], in[t]) << "row " << i << " input " << t;
      EXPECT_EQ(targets[i * kT + t], tg[t]) << "row " << i << " target " << t;
    }
  }
}

TEST(FirstSampleIndex, Formula) {
  // step * (m*N*A) + micro_step * (m*N) + rank * m with m = 2, N = 2, A = 2.
  EXPECT_EQ(first_sample_index(0, 0, 0, 2, 2, 2), 0);
  EXPECT_EQ(first_sample_index(0, 0, 1, 2, 2, 2), 2);
  EXPECT_EQ(first_sample_index(0, 1, 0, 2, 2, 2), 4);
  EXPECT_EQ(first_sample_index(1, 1, 1, 2, 2, 2), 14);
  EXPECT_EQ(first_sample_index(3, 0, 0, 8, 1, 1), 24);
  EXPECT_THROW(first_sample_index(0, 0, 2, 2, 2, 2), std::invalid_argument);   // rank >= world
  EXPECT_THROW(first_sample_index(0, 2, 0, 2, 2, 2), std::invalid_argument);   // micro_step >= accumulation
  EXPECT_THROW(first_sample_index(-1, 0, 0, 2, 2, 2), std::invalid_argument);  // negative step
  EXPECT_THROW(first_sample_index(0, 0, 0, 0, 2, 2), std::invalid_argument);   // empty micro-batch
}

// For every (world size N, accumulation A) with global batch 8, the ranks together read, index for
// index, what one process with micro-batch 8 reads, and each global index exactly once.
TEST_F(SampleLoaderTest, RanksTogetherReadTheSingleProcessSequence) {
  constexpr int kT = 5;
  constexpr int kGlobal = 8;
  constexpr int kSteps = 7;  // 56 samples over 13 windows per epoch: crosses four epoch boundaries
  const TokenDataset dataset = positions(kT * 13 + 1);
  const SampleLoader loader(dataset, kT, 2024);
  std::vector<std::int32_t> ref_in(kSteps * kGlobal * kT), ref_tg(kSteps * kGlobal * kT);
  for (int step = 0; step < kSteps; ++step) {
    const std::int64_t first = first_sample_index(step, 0, 0, kGlobal, 1, 1);
    loader.batch(first, kGlobal, ref_in.data() + first * kT, ref_tg.data() + first * kT);
  }

  const int configs[][2] = {{1, 1}, {2, 1}, {4, 1}, {1, 2}, {2, 2}, {4, 2}};  // {N, A}
  for (const auto& config : configs) {
    const int world = config[0];
    const int accumulation = config[1];
    const int micro = kGlobal / (world * accumulation);
    std::vector<int> reads(kSteps * kGlobal, 0);
    for (int step = 0; step < kSteps; ++step) {
      for (int a = 0; a < accumulation; ++a) {
        for (int rank = 0; rank < world; ++rank) {
          const SampleLoader rank_loader(dataset, kT, 2024);  // each rank builds its own loader
          const std::int64_t first = first_sample_index(step, a, rank, micro, world, accumulation);
          std::vector<std::int32_t> in(micro * kT), tg(micro * kT);
          rank_loader.batch(first, micro, in.data(), tg.data());
          for (int i = 0; i < micro; ++i) {
            const std::int64_t g = first + i;
            ASSERT_LT(g, kSteps * kGlobal) << "N=" << world << " A=" << accumulation << " rank " << rank;
            ++reads[g];
            for (int t = 0; t < kT; ++t) {
              ASSERT_EQ(in[i * kT + t], ref_in[g * kT + t])
                  << "N=" << world << " A=" << accumulation << " step " << step << " micro-step " << a << " rank "
                  << rank << " sample " << g << " input " << t;
              ASSERT_EQ(tg[i * kT + t], ref_tg[g * kT + t])
                  << "N=" << world << " A=" << accumulation << " rank " << rank << " sample " << g << " target " << t;
            }
          }
        }
      }
    }
    for (int g = 0; g < kSteps * kGlobal; ++g) {
      EXPECT_EQ(reads[g], 1) << "N=" << world << " A=" << accumulation << ": global sample " << g;
    }
  }
}

TEST_F(SampleLoaderTest, DatasetTooSmallNamesFileCountAndSeqLen) {
  const TokenDataset dataset = positions(8);
  try {
    SampleLoader loader(dataset, 8, 1);
    FAIL() << "8 tokens accepted for seq_len 8";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("pos_0.bin"), std::string::npos) << message;
    EXPECT_NE(message.find("holds 8 tokens"), std::string::npos) << message;
    EXPECT_NE(message.find("seq_len 8"), std::string::npos) << message;
  }
  EXPECT_EQ(SampleLoader(dataset, 7, 1).windows_per_epoch(), 1) << "8 tokens make one window of seq_len 7";
  EXPECT_THROW(SampleLoader(dataset, 0, 1), std::invalid_argument);
}

TEST_F(SampleLoaderTest, NegativeIndexIsRefused) {
  const SampleLoader loader(positions(20), 4, 1);
  std::vector<std::int32_t> in(4), tg(4);
  EXPECT_THROW(loader.sample(-1, in.data(), tg.data()), std::invalid_argument);
}

}  // namespace
}  // namespace tessera
