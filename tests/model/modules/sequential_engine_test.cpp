// Sequential models under ShardedEngine on 2 ranks: Linear/ReLU/Linear (behind an embedding that
// turns the token batch into features) trained at ZeRO-0 and ZeRO-3 gives the same losses and
// parameters bit for bit at accumulation 1 (the engine's promise: with accumulation, stages 0-1
// sum a rank's micro-batch gradients before the reduction and stages 2-3 after it, so the last
// bits may differ); so does a model of every new module (Dropout, Residual, GELU, SiLU) at stages
// 0-3. Every rank draws the same dropout mask for the same counter, the mask of a one-process draw
// (the mask does not depend on the rank or the rank count).
// tessera-test-ranks: 2
// tessera-test-timeout: 300
#include <gtest/gtest.h>
#include <mpi.h>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/core/random.hpp"
#include "tessera/model/modules/activation.hpp"
#include "tessera/model/modules/dropout.hpp"
#include "tessera/model/modules/embedding.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/model/modules/residual.hpp"
#include "tessera/model/modules/sequential.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"
#include "tests/comm/comm_test_support.hpp"

namespace tessera {
namespace {

constexpr std::int64_t kVocab = 11, kSeq = 5, kWidth = 12, kHidden = 20, kGlobalRows = 8;
constexpr std::uint64_t kSeed = 23;

std::unique_ptr<Sequential> linear_relu_linear_model() {
  return std::make_unique<Sequential>(std::make_unique<Embedding>(kVocab, kSeq, kWidth, 0.5f),
                                      std::make_unique<Linear>(kWidth, kHidden, true, 0.3f), std::make_unique<Relu>(),
                                      std::make_unique<Linear>(kHidden, kVocab, true, 0.3f));
}

std::unique_ptr<Sequential> every_module_model() {
  auto model = std::make_unique<Sequential>(std::make_unique<Embedding>(kVocab, kSeq, kWidth, 0.5f));
  model->add(std::make_unique<Dropout>(0.2f), "drop_in")
      .add(std::make_unique<Residual>(std::make_unique<Sequential>(
               std::make_unique<Linear>(kWidth, kHidden, true, 0.3f), std::make_unique<Gelu>(),
               std::make_unique<Dropout>(0.1f), std::make_unique<Linear>(kHidden, kWidth, true, 0.3f))),
           "block")
      .add(std::make_unique<Silu>())
      .add(std::make_unique<Linear>(kWidth, kVocab, true, 0.3f), "head");
  return model;
}

// Rows [first, first + count) of step `step`'s global batch, a function of (step, row) only.
MicroBatch rows_of_step(Device& device, int step, std::int64_t first, std::int64_t count) {
  std::vector<std::int32_t> in, tg;
  for (std::int64_t r = first; r < first + count; ++r) {
    Rng rng(static_cast<std::uint64_t>(step) * 1009u + static_cast<std::uint64_t>(r));
    for (std::int64_t t = 0; t < kSeq; ++t) {
      in.push_back(static_cast<std::int32_t>(rng.below(kVocab)));
      tg.push_back(static_cast<std::int32_t>(rng.below(kVocab)));
    }
  }
  return {Tensor::from_host_i32(device, in, {count, kSeq}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {count, kSeq}, MemoryCategory::kWorkspace)};
}

struct EngineRun {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;
};

EngineRun train(std::unique_ptr<Sequential> model, ZeroStage stage, std::int64_t accumulation) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  seed_dropout(*model, kSeed);
  ShardingConfig config;
  config.stage = stage;
  config.grad_clip = 1.0f;
  EngineRun run;
  ShardedEngine engine(*model, *device, world, config, kSeed);
  Trainer trainer(engine);
  const std::int64_t n = world.size(), micro = kGlobalRows / n / accumulation;
  for (int s = 0; s < 4; ++s) {
    std::vector<MicroBatch> batches;
    for (std::int64_t a = 0; a < accumulation; ++a) {
      batches.push_back(rows_of_step(*device, s, a * micro * n + world.rank() * micro, micro));
    }
    run.losses.push_back(trainer.train_step(batches, 1e-2f).loss);
  }
  const auto full = gather_full_parameters(engine);
  for (const NamedParameter& np : model->named_parameters()) run.params.push_back(full.at(np.name));
  return run;
}

void expect_bit_identical(const EngineRun& actual, const EngineRun& expected, const std::string& what) {
  ASSERT_EQ(actual.losses.size(), expected.losses.size());
  for (std::size_t s = 0; s < expected.losses.size(); ++s) {
    EXPECT_EQ(actual.losses[s], expected.losses[s])
        << what << ": loss at step " << s << ", rank " << testing::world_rank();
  }
  ASSERT_EQ(actual.params.size(), expected.params.size());
  for (std::size_t p = 0; p < expected.params.size(); ++p) {
    EXPECT_EQ(actual.params[p], expected.params[p])
        << what << ": parameter " << p << ", rank " << testing::world_rank();
  }
}

TEST(SequentialUnderEngine, LinearReluLinearIsBitIdenticalAtZero0AndZero3) {
  const EngineRun zero0 = train(linear_relu_linear_model(), ZeroStage::kStage0, 1);
  const EngineRun zero3 = train(linear_relu_linear_model(), ZeroStage::kStage3, 1);
  expect_bit_identical(zero3, zero0, "ZeRO-3 vs ZeRO-0");
  EXPECT_LT(zero0.losses.back(), zero0.losses.front()) << "the loss did not fall";
}

TEST(SequentialUnderEngine, EveryNewModuleIsBitIdenticalAcrossStages) {
  const EngineRun zero0 = train(every_module_model(), ZeroStage::kStage0, 1);
  for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
    expect_bit_identical(train(every_module_model(), stage, 1), zero0,
                         "stage " + std::to_string(static_cast<int>(stage)) + " vs ZeRO-0 (dropout, residual)");
  }
}

TEST(SequentialUnderEngine, EveryRankDrawsTheOneProcessMask) {
  auto device = make_cpu_device();
  constexpr int kN = 4096;
  Dropout dropout(0.5f);
  Sequential model;
  model.add(std::make_unique<Dropout>(0.5f), "drop");
  seed_dropout(model, kSeed, /*counter=*/3);
  dropout.seed(kSeed, "drop", 3);  // the one-process draw of the same (seed, name, counter)
  Context ctx(*device);
  const Tensor x =
      Tensor::from_host(*device, std::vector<float>(kN, 1.0f), {kN}, DType::kF32, MemoryCategory::kActivations);
  const std::vector<float> mine = model.forward(ctx, x).to_host_f32();
  const std::vector<float> reference = dropout.forward(ctx, x).to_host_f32();
  EXPECT_EQ(mine, reference) << "rank " << testing::world_rank();
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<float> all(static_cast<std::size_t>(kN) * size);
  MPI_Allgather(mine.data(), kN, MPI_FLOAT, all.data(), kN, MPI_FLOAT, MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r) {
    EXPECT_TRUE(std::equal(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(r) * kN))
        << "rank " << r << " drew another mask than rank " << testing::world_rank();
  }
}

}  // namespace
}  // namespace tessera
