// Checkpoints of tensor-parallel runs: a tp 2 x dp 2 ZeRO-3 checkpoint (format 5: each split
// parameter saved as its pieces under its global name) loads into tp 2 at ZeRO-1, tp 1 x dp 4 and
// tp 4 x dp 1 with every state tensor (master, exp_avg, exp_avg_sq) the same whole tensors bit for
// bit; a resume at the same layout continues bit-identically and at another within 1e-5; meta.h5's
// /model/<name> and every export read the whole tensors, identical to those of the same state saved
// without tensor parallelism; 8-bit moments (tied to their blocks) refuse another tensor-parallel size.
// tessera-test-ranks: 4
// tessera-test-timeout: 300
#include <gtest/gtest.h>

#include <cstring>

#include "checkpoint_test_support.hpp"
#include "tessera/checkpointing/export/checkpoint_parameters.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tessera/sharding/tensor_parallel_mesh.hpp"
#include "tessera/training/losses/token_cross_entropy.hpp"

namespace tessera::testing {
namespace {

constexpr int kTpSaveAt = 3;
constexpr int kTpSteps = 6;

// Heads and hidden features divide by 4; the vocabulary (13) does not, so pieces are uneven.
GptConfig tp_ckpt_gpt() {
  GptConfig c = tiny_gpt();
  c.heads = 4;
  c.channels = 16;
  return c;
}

struct TpLayout {
  int tp = 2;
  ZeroStage stage = ZeroStage::kStage3;
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  std::string describe() const {
    return "tp " + std::to_string(tp) + " x dp " + std::to_string(world_size() / tp) + " ZeRO-" +
           std::to_string(zero_stage_number(stage));
  }
};

// A tensor-parallel engine over the whole world (tp 1: data parallel only).
struct TpEngine {
  std::unique_ptr<Device> device = make_cpu_device();
  MpiCommunicator world{MPI_COMM_WORLD};
  TensorParallelMesh mesh;
  std::shared_ptr<TensorParallel> tp;
  std::unique_ptr<Gpt> model;
  std::unique_ptr<ShardedEngine> engine;
  std::unique_ptr<Trainer> trainer;

  explicit TpEngine(const TpLayout& layout, std::uint64_t seed = kSeed) {
    if (layout.tp > 1) {
      mesh = make_tensor_parallel_mesh(world, layout.tp, {});
      tp = std::make_shared<TensorParallel>(std::make_shared<CommTensorParallelGroup>(*mesh.tensor), true);
    }
    model = std::make_unique<Gpt>(tp_ckpt_gpt(), tp);
    RunSetup setup(layout.stage, 0, {}, layout.optimizer);
    engine = std::make_unique<ShardedEngine>(*model, *device, data(), sharding_config(setup), seed, mesh.tensor.get());
    trainer = std::make_unique<Trainer>(
        *engine, tp ? std::make_shared<TokenCrossEntropy>(tp, tp_ckpt_gpt().vocab_size) : nullptr);
  }
  Communicator& data() { return mesh.data ? *mesh.data : world; }

  std::vector<float> train(int from, int to) {
    return train_global_steps(*device, *trainer, tp_ckpt_gpt(), data().rank(), data().size(), from, to);
  }

  TrainingProgress progress(int step) const { return progress_after(step, world.rank(), tp_ckpt_gpt()); }

  // The whole tensors of state `kind`: each rank's pieces put in place, summed over the group
  // (disjoint pieces and zeros: exact; replicated parameters from group rank 0 only).
  std::map<std::string, std::vector<float>> whole_state(int kind) {
    std::map<std::string, std::vector<float>> pieces = gather_state(*engine, kind), out;
    for (const NamedParameter& np : model->named_parameters()) {
      const Parameter& p = *np.parameter;
      std::vector<float> whole(static_cast<std::size_t>(shape_numel(p.full_shape())), 0.0f);
      const int tp_rank = mesh.tensor ? mesh.tensor->rank() : 0;
      if (p.slice.split() || tp_rank == 0) {
        const std::vector<float>& piece = pieces.at(np.name);
        for_each_global_run(p.shape, p.slice, 0, p.numel(), [&](std::int64_t g, std::int64_t l, std::int64_t n) {
          std::copy_n(piece.begin() + l, n, whole.begin() + g);
        });
      }
      if (mesh.tensor) mesh.tensor->all_reduce(Span(whole), DType::kF32, ReduceOp::kSum).wait();
      out[np.name] = std::move(whole);
    }
    return out;
  }
};

using WholeStates = std::vector<std::map<std::string, std::vector<float>>>;  // master, exp_avg, exp_avg_sq

WholeStates whole_states(TpEngine& e) { return {e.whole_state(0), e.whole_state(1), e.whole_state(2)}; }

TEST(TensorParallelCheckpoint, LoadsIntoAnyLayoutWithTheSameWholeState) {
  SharedTempDir dir;
  const TpLayout saved{2, ZeroStage::kStage3};
  std::vector<float> straight;
  WholeStates reference;
  {
    TpEngine run(saved);
    run.train(0, kTpSaveAt);
    reference = whole_states(run);
    save_checkpoint(*run.engine, run.world, dir.path(), run.progress(kTpSaveAt), tiny_run_config(tp_ckpt_gpt()));
    straight = run.train(kTpSaveAt, kTpSteps);
  }
  const fs::path ckpt = dir.path() / step_dir_name(kTpSaveAt);
  for (const TpLayout& to : {TpLayout{2, ZeroStage::kStage3}, TpLayout{2, ZeroStage::kStage1},
                             TpLayout{1, ZeroStage::kStage1}, TpLayout{4, ZeroStage::kStage3}}) {
    TpEngine resumed(to, /*seed=*/999);
    const LoadResult loaded = load_checkpoint(*resumed.engine, resumed.world, ckpt, tiny_run_config(tp_ckpt_gpt()));
    EXPECT_EQ(loaded.meta.layout.tp, 2);
    EXPECT_EQ(loaded.meta.format_version, kTensorParallelFormat);
    const WholeStates states = whole_states(resumed);
    for (std::size_t k = 0; k < states.size(); ++k) {
      EXPECT_EQ(compare_states(states[k], reference[k]), "") << to.describe() << ", state " << k;
    }
    const std::vector<float> continued = resumed.train(kTpSaveAt, kTpSteps);
    for (std::size_t s = 0; s < straight.size(); ++s) {
      if (to.tp == 2) {
        EXPECT_EQ(continued[s], straight[s]) << to.describe() << ": step " << kTpSaveAt + s;
      } else {
        EXPECT_NEAR(continued[s], straight[s], 1e-5 * std::abs(straight[s])) << to.describe() << ": step " << s;
      }
    }
  }
}

TEST(TensorParallelCheckpoint, MetaAndExportsHoldTheWholeTensors) {
  SharedTempDir dir;
  WholeStates reference;
  {
    TpEngine run(TpLayout{2, ZeroStage::kStage3});
    run.train(0, kTpSaveAt);
    reference = whole_states(run);
    save_checkpoint(*run.engine, run.world, dir.path() / "tp", run.progress(kTpSaveAt), tiny_run_config(tp_ckpt_gpt()));
  }
  // The same state saved without tensor parallelism.
  {
    TpEngine plain(TpLayout{1, ZeroStage::kStage1}, 999);
    load_checkpoint(*plain.engine, plain.world, dir.path() / "tp" / step_dir_name(kTpSaveAt),
                    tiny_run_config(tp_ckpt_gpt()));
    save_checkpoint(*plain.engine, plain.world, dir.path() / "plain", plain.progress(kTpSaveAt),
                    tiny_run_config(tp_ckpt_gpt()));
  }
  if (world_rank() != 0) return;
  const fs::path tp_ckpt = dir.path() / "tp" / step_dir_name(kTpSaveAt);
  const fs::path plain_ckpt = dir.path() / "plain" / step_dir_name(kTpSaveAt);
  // meta.h5's virtual datasets stitch the pieces into the whole tensors.
  for (const auto& [name, values] : reference[0]) {
    const std::vector<float> stored = h5_read((tp_ckpt / kMetaFileName).string(), "/model/" + name);
    EXPECT_EQ(std::memcmp(stored.data(), values.data(), values.size() * sizeof(float)), 0) << "/model/" << name;
    const std::vector<float> moment = h5_read((tp_ckpt / kMetaFileName).string(), "/optimizer/exp_avg/" + name);
    EXPECT_EQ(std::memcmp(moment.data(), reference[1].at(name).data(), values.size() * sizeof(float)), 0)
        << "/optimizer/exp_avg/" << name;
  }
  // What every export writes: the same parameters, in the same order, bit for bit.
  CheckpointParameters tp_params(tp_ckpt), plain_params(plain_ckpt);
  std::vector<std::string> tp_order, plain_order;
  for (const ParamRecord& p : tp_params.in_order()) tp_order.push_back(p.name);
  for (const ParamRecord& p : plain_params.in_order()) plain_order.push_back(p.name);
  EXPECT_EQ(tp_order, plain_order);
  std::map<std::string, std::vector<float>> from_tp, from_plain;
  tp_params.for_each([&](const ParamRecord& p, const std::vector<float>& v) { from_tp[p.name] = v; });
  plain_params.for_each([&](const ParamRecord& p, const std::vector<float>& v) { from_plain[p.name] = v; });
  EXPECT_EQ(compare_states(from_tp, from_plain), "");
  EXPECT_EQ(compare_states(from_tp, reference[0]), "");
}

TEST(TensorParallelCheckpoint, BlockQuantizedStateRefusesAnotherTensorParallelSize) {
  SharedTempDir dir;
  {
    TpEngine run(TpLayout{2, ZeroStage::kStage1, OptimizerKind::kAdamW8bit});
    run.train(0, 1);
    save_checkpoint(*run.engine, run.world, dir.path(), run.progress(1), tiny_run_config(tp_ckpt_gpt()));
  }
  TpEngine other(TpLayout{1, ZeroStage::kStage1, OptimizerKind::kAdamW8bit}, 999);
  try {
    load_checkpoint(*other.engine, other.world, dir.path() / step_dir_name(1), tiny_run_config(tp_ckpt_gpt()));
    FAIL() << "8-bit state loaded into another tensor-parallel size";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("saved with 2, resuming with 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::testing
