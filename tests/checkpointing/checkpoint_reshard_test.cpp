// Resharding: a checkpoint written at one rank count / ZeRO stage / hybrid group size is loaded at
// another (4->2, 2->4, 2->3, 4->3, stage 3->1, hybrid 2x2 -> plain 4; at 2 ranks 2->1, 1->2,
// stage 3->1), and the next steps' losses equal those of the run that never stopped within 1e-6
// relative (only the order of gradient sums differs). Each rank reads only the chunks that hold
// its new shard's ranges.
// tessera-test-ranks: 2 4
// tessera-test-timeout: 300
#include <gtest/gtest.h>

#include "checkpoint_test_support.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"

namespace tessera::testing {
namespace {

constexpr int kReshardSaveAt = 3;
constexpr int kReshardSteps = 6;
constexpr std::int64_t kChunk = 4;

struct Case {
  int from_ranks;
  RunSetup from;
  int to_ranks;
  RunSetup to;
};

void expect_reshard_continues(const Case& c) {
  const std::string what = c.from.describe(c.from_ranks) + " -> " + c.to.describe(c.to_ranks);
  SharedTempDir dir;
  std::vector<float> reference_losses;
  std::map<std::string, std::vector<float>> reference_params;
  // The run that never stops, and the saved run, at the old rank count.
  if (auto comm = first_ranks(c.from_ranks)) {
    TrainedEngine reference(*comm, c.from);
    reference_losses = reference.train(0, kReshardSteps);
    reference_params = gather_state(*reference.engine, 0);
    TrainedEngine first(*comm, c.from);
    first.train(0, kReshardSaveAt);
    SaveOptions options;
    options.chunk_elements = kChunk;  // small chunks, so reads of a shard's part are visibly partial
    save_checkpoint(*first.engine, *comm, dir.path(), first.progress(kReshardSaveAt), tiny_run_config(), options);
  }
  // Every rank learns rank 0's reference.
  reference_losses.resize(kReshardSteps);
  MPI_Bcast(reference_losses.data(), kReshardSteps, MPI_FLOAT, 0, MPI_COMM_WORLD);

  // Resume at the new rank count.
  if (auto comm = first_ranks(c.to_ranks)) {
    TrainedEngine resumed(*comm, c.to, /*seed=*/999);
    const LoadResult loaded =
        load_checkpoint(*resumed.engine, *comm, dir.path() / step_dir_name(kReshardSaveAt), tiny_run_config());
    EXPECT_EQ(loaded.progress.step, kReshardSaveAt) << what;
    EXPECT_EQ(loaded.meta.world_size, c.from_ranks) << what;
    // Ranks that existed before get their RNG words back, new ranks none.
    if (comm->rank() < c.from_ranks) {
      EXPECT_EQ(loaded.progress.rng_state.size(), 2u) << what << ", rank " << comm->rank();
    } else {
      EXPECT_TRUE(loaded.progress.rng_state.empty()) << what << ", rank " << comm->rank();
    }
    // Right after loading: the full parameters are the saved ones (compared on the next steps' losses).
    const std::vector<float> losses = resumed.train(kReshardSaveAt, kReshardSteps);
    for (int s = kReshardSaveAt; s < kReshardSteps; ++s) {
      const float expected = reference_losses[static_cast<std::size_t>(s)];
      EXPECT_NEAR(losses[s - kReshardSaveAt], expected, 1e-6 * std::abs(expected))
          << what << ": loss at step " << s << ", rank " << comm->rank();
    }
    // Each rank read its share: its optimizer range plus at most a partial chunk at both ends of
    // every contiguous request (requests break at parameter and old shard boundaries).
    std::int64_t bound = 0, total = 0;
    for (const auto& unit : resumed.engine->units()) {
      const auto requests = static_cast<std::int64_t>(unit->layout().entries().size()) + c.from_ranks;
      bound += 3 * 4 * (unit->optimizer_range().count + 2 * kChunk * requests);
      total += 3 * 4 * unit->layout().numel();
    }
    EXPECT_LE(loaded.bytes_read, bound) << what << ": rank " << comm->rank() << " read more than its share";
    if (c.to.stage != ZeroStage::kStage0 && c.to.hybrid_group == 0 && comm->size() > 1) {
      EXPECT_LT(loaded.bytes_read, total) << what << ": rank " << comm->rank() << " read the whole state";
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CheckpointReshard, FourRanks) {
  if (world_size() != 4) GTEST_SKIP() << "needs 4 ranks";
  const RunSetup s1(ZeroStage::kStage1), s2(ZeroStage::kStage2), s3(ZeroStage::kStage3);
  expect_reshard_continues({4, s3, 2, s3});
  expect_reshard_continues({2, s2, 4, s2});
  expect_reshard_continues({2, s3, 3, s3});
  expect_reshard_continues({4, s1, 3, s3});
  expect_reshard_continues({4, s3, 4, s1});
  expect_reshard_continues({4, RunSetup(ZeroStage::kStage3, 2), 4, s2});
  expect_reshard_continues({4, RunSetup(ZeroStage::kStage0), 3, s2});
}

TEST(CheckpointReshard, TwoRanks) {
  if (world_size() != 2) GTEST_SKIP() << "the 4-rank cases run in FourRanks";
  const RunSetup s1(ZeroStage::kStage1), s3(ZeroStage::kStage3);
  expect_reshard_continues({2, s3, 1, s1});
  expect_reshard_continues({1, RunSetup(ZeroStage::kStage0), 2, s3});
  expect_reshard_continues({2, s3, 2, s1});
}

}  // namespace
}  // namespace tessera::testing
