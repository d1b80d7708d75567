// Tensor parallelism composed with ZeRO: GPT-2 and Llama (grouped-query attention) split over tp 2
// and 4 ranks, times the data-parallel rest at ZeRO-1 and ZeRO-3, with sequence parallelism on and
// off, against one process training the same global batch (at 8 ranks tp 2 x dp 4 and tp 4 x dp 2).
// tessera-test-ranks: 2 4 8
// tessera-test-timeout: 300
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "sharding_test_support.hpp"
#include "tessera/sharding/tensor_parallel_mesh.hpp"
#include "tessera/training/losses/token_cross_entropy.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {
namespace {

constexpr int kTpSteps = 20;
constexpr std::int64_t kTpGlobal = 8;

// Heads, key/value heads and hidden features divide by 4; the vocabulary (13) does not, so the
// embedding's and head's pieces are uneven (7 + 6, 4 + 3 + 3 + 3).
GptConfig tp_gpt2() {
  GptConfig c;
  c.vocab_size = 13;
  c.max_seq_len = 6;
  c.layers = 2;
  c.heads = 4;
  c.channels = 16;
  return c;
}

GptConfig tp_llama() { return GptConfig::llama(13, 6, 2, 8, 32, 4, 64); }

RunResult tp_reference(const GptConfig& config) {
  auto device = make_cpu_device();
  Gpt model(config);
  materialize_parameters(model, *device, kSeed);
  LocalTrainer trainer(model, *device, test_adamw(), kClip);
  RunResult out;
  for (int s = 0; s < kTpSteps; ++s) {
    const StepResult r = trainer.step({global_rows(*device, config, s, 0, kTpGlobal)}, kLr);
    out.losses.push_back(r.loss);
    out.norms.push_back(r.grad_norm);
  }
  return out;
}

struct TpSetup {
  int tp = 2;
  ZeroStage stage = ZeroStage::kStage1;
  bool sequence_parallel = true;
};

RunResult tp_run(const GptConfig& config, const TpSetup& setup) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  TensorParallelMesh mesh = make_tensor_parallel_mesh(world, setup.tp, {});
  auto tp = std::make_shared<TensorParallel>(std::make_shared<CommTensorParallelGroup>(*mesh.tensor),
                                             setup.sequence_parallel);
  Gpt model(config, tp);
  ShardingConfig sharding;
  sharding.stage = setup.stage;
  sharding.optimizer.adamw = test_adamw();
  sharding.grad_clip = kClip;
  ShardedEngine engine(model, *device, *mesh.data, sharding, kSeed, mesh.tensor.get());
  Trainer trainer(engine, std::make_shared<TokenCrossEntropy>(tp, config.vocab_size));
  const std::int64_t micro = kTpGlobal / mesh.data->size();
  RunResult out;
  for (int s = 0; s < kTpSteps; ++s) {
    const StepResult r = trainer.train_step({global_rows(*device, config, s, mesh.data->rank() * micro, micro)}, kLr);
    out.losses.push_back(r.loss);
    out.norms.push_back(r.grad_norm);
  }
  return out;
}

std::string name_of(const TpSetup& s) {
  return "tp " + std::to_string(s.tp) + " x dp " + std::to_string(world_size() / s.tp) + ", ZeRO-" +
         std::to_string(zero_stage_number(s.stage)) + ", sequence parallel " + (s.sequence_parallel ? "on" : "off");
}

void expect_tp_close(const RunResult& actual, const RunResult& expected, double rel, const std::string& what) {
  ASSERT_EQ(actual.losses.size(), expected.losses.size());
  for (std::size_t s = 0; s < expected.losses.size(); ++s) {
    EXPECT_NEAR(actual.losses[s], expected.losses[s], rel * std::abs(expected.losses[s]))
        << what << ": loss at step " << s << ", rank " << world_rank();
    EXPECT_NEAR(actual.norms[s], expected.norms[s], rel * expected.norms[s])
        << what << ": gradient norm at step " << s << ", rank " << world_rank();
  }
}

void check_against_one_process(const GptConfig& config) {
  const RunResult reference = tp_reference(config);
  EXPECT_GT(reference.norms[0], kClip) << "the first steps should clip";
  for (int tp : {2, 4}) {
    if (tp > world_size()) continue;
    for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage3}) {
      for (bool sp : {true, false}) {
        const TpSetup setup{tp, stage, sp};
        expect_tp_close(tp_run(config, setup), reference, 1e-5, name_of(setup));
      }
    }
  }
}

TEST(TensorParallel, Gpt2MatchesOneProcess) { check_against_one_process(tp_gpt2()); }

TEST(TensorParallel, LlamaWithGroupedQueryAttentionMatchesOneProcess) { check_against_one_process(tp_llama()); }

// ZeRO stages over the data-parallel ranks add nothing to the reduction order of a step at
// accumulation 1: every stage gives the same bits, as without tensor parallelism.
TEST(TensorParallel, ZeroStagesAreBitIdenticalUnderTensorParallelism) {
  for (bool sp : {true, false}) {
    const RunResult stage1 = tp_run(tp_gpt2(), {2, ZeroStage::kStage1, sp});
    for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage2, ZeroStage::kStage3}) {
      const TpSetup setup{2, stage, sp};
      expect_identical(tp_run(tp_gpt2(), setup), stage1, name_of(setup) + " vs ZeRO-1");
    }
  }
}

TEST(TensorParallel, RefusesHeadsTheGroupDoesNotDivide) {
  MpiCommunicator world(MPI_COMM_WORLD);
  TensorParallelMesh mesh = make_tensor_parallel_mesh(world, world_size(), {});
  auto tp = std::make_shared<TensorParallel>(std::make_shared<CommTensorParallelGroup>(*mesh.tensor), true);
  GptConfig c = tp_gpt2();
  c.heads = 2;
  c.channels = 18;
  c.ffn_dim = 64;
  if (world_size() == 2) c.heads = 3, c.channels = 9;
  try {
    Gpt model(c, tp);
    FAIL() << "a head count the group does not divide was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("attention heads"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(c.heads)), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tessera::testing
