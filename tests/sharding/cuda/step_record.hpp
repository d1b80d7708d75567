// What the CUDA sharding tests compare between a GPU run and a CPU run: the losses and gradient
// norms of a few steps and the full parameters after them, with the comparison itself.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/device_communicator.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"
#include "tests/runtime/cuda/gpu_test_support.hpp"
#include "tests/sharding/sharding_test_support.hpp"

namespace tessera::testing {

struct StepRecord {
  std::vector<float> losses;
  std::vector<double> norms;
  std::vector<std::string> names;
  std::vector<std::vector<float>> params;  // full, in named_parameters order
};

// `steps` steps of a trainer over `engine` (which trains `model`), step s on `batches(s)`, then the
// full parameters (collective over the engine's shard group); waits for the device.
inline StepRecord record_steps(ShardedEngine& engine, Gpt& model, int steps,
                               const std::function<std::vector<MicroBatch>(int step)>& batches, float lr) {
  Trainer trainer(engine);
  StepRecord record;
  for (int s = 0; s < steps; ++s) {
    const StepResult r = trainer.train_step(batches(s), lr);
    record.losses.push_back(r.loss);
    record.norms.push_back(r.grad_norm);
  }
  const auto full = gather_full_parameters(engine);
  for (const NamedParameter& np : model.named_parameters()) {
    record.names.push_back(np.name);
    record.params.push_back(full.at(np.name));
  }
  engine.device().synchronize();
  return record;
}

// Losses, norms and parameters of `actual` within `tolerance` (relative) of `expected`.
inline void expect_steps_close(const StepRecord& actual, const StepRecord& expected, double tolerance,
                               const std::string& where) {
  ASSERT_EQ(actual.losses.size(), expected.losses.size()) << where;
  for (std::size_t s = 0; s < expected.losses.size(); ++s) {
    EXPECT_NEAR(actual.losses[s], expected.losses[s], tolerance * std::fabs(expected.losses[s]))
        << where << ": loss at step " << s;
    EXPECT_NEAR(actual.norms[s], expected.norms[s], tolerance * expected.norms[s] + 1e-9)
        << where << ": gradient norm at step " << s;
  }
  ASSERT_EQ(actual.params.size(), expected.params.size()) << where;
  for (std::size_t i = 0; i < expected.params.size(); ++i) {
    const std::string error =
        compare_relative(actual.params[i], expected.params[i], tolerance, where + ": " + expected.names[i]);
    EXPECT_TRUE(error.empty()) << error;
  }
}

// One configuration of the tiny GPT the CUDA sharding tests train.
struct TinySetting {
  std::string name;
  MixedPrecision precision = {};
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  int micro_batches = 1;  // per rank and step
  bool checkpoint_blocks = false;
  double tolerance = 1e-4;  // against the reference, relative
};

inline constexpr int kTinySteps = 3;
inline constexpr std::int64_t kTinyGlobal = 8;

// Collective over `host_world`: kTinySteps steps of `setting` at ZeRO `stage` with `offload` on
// `device` (each rank on its rows of the same global batches), the engine on the staged MPI
// communicator when the device is a GPU.
inline StepRecord run_tiny(Device& device, Communicator& host_world, const TinySetting& setting, ZeroStage stage,
                           OffloadConfig offload = {}) {
  const std::unique_ptr<Communicator> device_world =
      make_device_world(device, host_world, CommOptions{}, DeviceComm::kMpi);
  Communicator& world = device_world ? *device_world : host_world;
  Gpt model(tiny_gpt());
  if (setting.checkpoint_blocks) apply_recompute(model, RecomputePolicy::by_type());
  ShardingConfig config;
  config.stage = stage;
  config.precision = setting.precision;
  config.optimizer.kind = setting.optimizer;
  config.optimizer.adamw = test_adamw();
  config.optimizer.block_size = 256;
  config.grad_clip = kClip;
  config.offload = std::move(offload);
  ShardedEngine engine(model, device, world, config, kSeed);
  const std::int64_t rows = kTinyGlobal / world.size() / setting.micro_batches;
  return record_steps(
      engine, model, kTinySteps,
      [&](int s) {
        std::vector<MicroBatch> micro;
        for (int m = 0; m < setting.micro_batches; ++m) {
          const std::int64_t first = (world.rank() * setting.micro_batches + m) * rows;
          micro.push_back(global_rows(device, tiny_gpt(), s, first, rows));
        }
        return micro;
      },
      kLr);
}

}  // namespace tessera::testing
