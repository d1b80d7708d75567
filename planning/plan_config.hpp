// PlanConfig: everything the memory planner needs to predict one rank's memory in a training step —
// the model, dtypes, optimizer, ZeRO stage, shard groups, micro-batch, activation checkpointing,
// offload and the device it must fit on. It mirrors ShardingConfig + the trainer's options;
// sharding_config() gives the ShardingConfig the planner runs the engine with. A run's own settings
// make one directly (for_run: the engine's ShardingConfig and the global-batch plan), so the batch is
// given once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/model/optim/optimizer_state.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/planning/model_spec.hpp"
#include "tessera/precision/mixed_precision.hpp"
#include "tessera/runtime/meta/meta_kernels.hpp"
#include "tessera/sharding/sharding_config.hpp"
#include "tessera/training/batch_plan.hpp"

namespace tessera {

// Parses a comma-separated list of "optimizer" / "params" with an optional ":cpu" (default) or
// ":nvme", or "none". Throws SettingError("plan.offload").
OffloadConfig parse_offload(const std::string& text);

// One training setting of a plan, in the library's name ("sharding.stage") with its value ("3").
struct PlanSetting {
  std::string setting;
  std::string value;
};

struct PlanConfig {
  ModelSpec model;
  std::int64_t seq_len = 0;  // tokens per sample; 0: the model's max_seq_len
  MixedPrecision precision;  // compute, param and reduce dtypes
  // Gradient accumulation dtype. The engine always accumulates in f32; bf16/f16 reproduce the
  // ZeRO paper's 2-byte gradients as arithmetic, for a model given by its parameter count only.
  DType grad_dtype = DType::kF32;
  OptimizerConfig optimizer;  // kind and 8-bit block size (AdamW's own settings do not change memory)
  ZeroStage stage = ZeroStage::kStage0;
  int ranks = 1;         // data-parallel ranks
  int hybrid_group = 0;  // shard within groups of this many ranks (0: all ranks)
  // Tensor parallelism (a GPT): ranks per tensor-parallel group (the job has ranks x tp ranks), the
  // group rank planned (rank 0 holds the largest pieces when the vocabulary does not divide), and
  // whether the norms and residual stream hold 1/tp of the token rows.
  int tp = 1;
  int tp_rank = 0;
  bool sequence_parallel = true;
  std::int64_t micro_batch = 1;
  std::int64_t accumulation = 1;
  RecomputePolicy recompute;  // activation checkpointing (recompute in backward)
  OffloadConfig offload;
  int prefetch_units = 1;
  bool reshard_after_forward = true;
  std::int64_t device_memory = 0;  // bytes per rank; 0: not given (fit is not judged)
  std::int64_t reserved = 0;       // bytes per rank held back for the runtime (context, allocator slack)
  // The device's memory is host memory (the CPU device): pinned-host bytes (offload staging) come
  // out of the same budget, so the fit counts them.
  bool host_is_device = false;
  // Host memory per rank for what a discrete device offloads (pinned state and staging); 0: not
  // given (the host side is not judged). Ignored when host_is_device.
  std::int64_t host_memory = 0;
  // The attention scratch of the device the plan is for (Kernels::attention_scratch_bytes of its
  // table: a CUDA device's bf16 copies and cuDNN's workspace), so the plan counts it as the run will.
  // Empty: none, as on the CPU.
  AttentionScratchSize attention_scratch;
  // How the engine cuts the model into units (ShardingConfig::unit_policy); empty: the root's direct
  // children, as for the GPT. A model of your own is planned with the policy its run uses.
  UnitPolicy unit_policy;

  // The plan of a run with these engine settings (stage, precision, hybrid group, prefetch,
  // reshard, optimizer, offload, unit policy) and this global-batch plan (plan_batch: its ranks,
  // micro-batch and accumulation; its seq_len for a GPT), checkpointed by `recompute`.
  static PlanConfig for_run(ModelSpec model, const ShardingConfig& sharding, const BatchPlan& batch,
                            const RecomputePolicy& recompute = {});
  // Takes the micro-batch and accumulation of `batch` (and its seq_len for a GPT). Throws
  // SettingError("plan.ranks") naming both when batch.ranks is not this plan's ranks.
  void set_batch(const BatchPlan& batch);

  // What the planned step builds, feeds and runs (the GPT with its checkpointing policy, its
  // (B,T) i32 inputs and targets and Trainer::train_step; or the custom model's own, checkpointed
  // by `recompute` too). Throw std::invalid_argument for a model given only by its parameter count.
  // With tp > 1 the GPT is split over `tp`'s group (required then).
  std::unique_ptr<Module> build_model(std::shared_ptr<TensorParallel> tp = nullptr) const;
  std::vector<BatchTensorSpec> batch_tensors() const;
  // `tp`: the group the model was built over (its loss is vocabulary-parallel), or null.
  PlanStepFunction step_function(std::shared_ptr<const TensorParallel> tp = nullptr) const;

  // The GPT is split over a tensor-parallel group (tp > 1).
  bool tp_split() const { return tp > 1; }
  // Ranks that shard the model state together: the hybrid group at stages 1-3, else all ranks.
  int shard_ranks() const;
  std::int64_t tokens_per_sample() const;
  // Throws SettingError ("plan.ranks", "sharding.hybrid_group", ...) naming what to change.
  void validate() const;
  // "ZeRO-3 on 8 ranks, compute bf16, param bf16, reduce bf16, grads f32, AdamW, micro 4 x accumulation 1,
  //  checkpointing blocks, offload none"
  std::string describe() const;
  // The engine's settings for this plan (NVMe offload included: on the meta device the engine's
  // store books its bytes without a file).
  ShardingConfig sharding_config() const;
  // The settings a training run needs to run this plan (model, batch, sharding, precision,
  // optimizer, recomputation, offload), for a program to print as its command line.
  std::vector<PlanSetting> training_settings() const;
};

}  // namespace tessera
