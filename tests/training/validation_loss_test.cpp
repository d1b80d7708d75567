// Validation loss on any rank count: within one 4-rank job, engines over the first 1, 2, 3 and 4
// ranks (ZeRO stages 0 and 3, same seed) evaluate the same 5 micro-batches of 3 windows and must
// print the same float bit for bit; the value equals the mean loss of all 15 windows evaluated as
// one batch on one rank (to rounding), and nonsense sets are refused.
// tessera-test-ranks: 4
// tessera-test-timeout: 120
#include "tessera/training/validation_loss.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "tessera/core/setting_error.hpp"
#include "tessera/text/data/token_file.hpp"
#include "tests/checkpointing/checkpoint_test_support.hpp"

namespace tessera::testing {
namespace {

constexpr ValidationSet kSet{5, 3};  // 15 windows: 2 rounds on 4 ranks, 3 on 2, 5 on 1

// A token file of ids below tiny_gpt's vocabulary, written by rank 0; every rank opens it.
std::string write_tokens(const SharedTempDir& dir) {
  const std::string path = (dir.path() / "val.bin").string();
  if (world_rank() == 0) {
    std::vector<std::int32_t> tokens;
    for (std::int32_t i = 0; i < 200; ++i)
      tokens.push_back((i * 7 + i / 13) % static_cast<std::int32_t>(tiny_gpt().vocab_size));
    write_token_file(path, tokens);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

// The loss on the first `ranks` world ranks, broadcast from world rank 0 to all.
float loss_on(int ranks, const RunSetup& setup, const SampleLoader& loader) {
  float loss = 0.0f;
  if (auto comm = first_ranks(ranks)) {
    TrainedEngine run(*comm, setup);
    run.train(0, 1);  // weights that are not the initial ones
    loss = validation_loss(*run.trainer, loader, kSet);
  }
  MPI_Bcast(&loss, 1, MPI_FLOAT, 0, MPI_COMM_WORLD);
  return loss;
}

std::uint32_t bits(float x) {
  std::uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

TEST(ValidationLoss, BitIdenticalOnOneTwoThreeAndFourRanks) {
  SharedTempDir dir;
  const TokenDataset data(write_tokens(dir));
  const SampleLoader loader(data, tiny_gpt().max_seq_len, kSeed, SampleOrder::kSequential);
  ASSERT_GE(loader.windows_per_epoch(), kSet.windows());
  for (const ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage3}) {
    const float one = loss_on(1, RunSetup(stage), loader);
    EXPECT_TRUE(std::isfinite(one) && one > 0.0f) << one;
    for (const int ranks : {2, 3, 4}) {
      const float many = loss_on(ranks, RunSetup(stage), loader);
      EXPECT_EQ(bits(many), bits(one)) << "ZeRO-" << zero_stage_number(stage) << ": " << ranks << " ranks give " << many
                                       << ", 1 rank gives " << one << " (rank " << world_rank() << ")";
    }
    // The oracle: the 15 windows as one batch on one rank, the mean over all their positions.
    float whole = 0.0f;
    if (auto comm = first_ranks(1)) {
      TrainedEngine run(*comm, RunSetup(stage));
      run.train(0, 1);
      const std::int64_t t = loader.seq_len(), n = kSet.windows();
      std::vector<std::int32_t> in(static_cast<std::size_t>(n * t)), tg(in.size());
      loader.batch(0, n, in.data(), tg.data());
      whole = run.trainer->evaluate({Tensor::from_host_i32(*run.device, in, {n, t}, MemoryCategory::kWorkspace),
                                     Tensor::from_host_i32(*run.device, tg, {n, t}, MemoryCategory::kWorkspace)});
      EXPECT_NEAR(one, whole, 1e-5 * whole) << "ZeRO-" << zero_stage_number(stage);
    }
  }
}

TEST(ValidationLoss, EmptySetsAreRefusedNamingTheSetting) {
  SharedTempDir dir;
  const TokenDataset data(write_tokens(dir));
  const SampleLoader loader(data, tiny_gpt().max_seq_len, kSeed, SampleOrder::kSequential);
  MpiCommunicator world(MPI_COMM_WORLD);
  TrainedEngine run(world, RunSetup());
  try {
    validation_loss(*run.trainer, loader, ValidationSet{0, 3});
    ADD_FAILURE() << "0 batches accepted";
  } catch (const SettingError& e) {
    EXPECT_NE(std::string(e.what()).find("eval.batches"), std::string::npos) << e.what();
  }
  EXPECT_THROW(validation_loss(*run.trainer, loader, ValidationSet{2, 0}), SettingError);
}

}  // namespace
}  // namespace tessera::testing
