// Optimizer state: what an optimizer keeps for one contiguous range of a flat parameter buffer (a
// sharding unit's optimizer range: the whole unit at ZeRO-0, this rank's shard otherwise), named
// by StateSpecs, and its update rule. The engine owns the f32 master weights, the reduced f32
// gradients and the state tensors themselves — in device memory, pinned host memory or an NVMe
// store — and runs the OptimizerRule over windows of the range: the whole range when everything is
// in memory, one streamed block at a time when some of it lives in files. The rule only sees
// pointers to one window, so checkpoints, the memory planner and offload handle any optimizer
// without knowing it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/model/optim/adamw.hpp"
#include "tessera/precision/dtype.hpp"
#include "tessera/runtime/param_segment.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {

class Kernels;

// One named state tensor over the optimizer range: one value per `elements_per_value` elements of
// the range (1: element for element; a block size: one value per block, e.g. a quantization scale).
struct StateTensor {
  std::string name;  // "exp_avg", also the checkpoint dataset name
  Tensor tensor;     // (count / elements_per_value) of its dtype in memory; undefined when in a file
  std::int64_t elements_per_value = 1;
};

// What a state tensor is, without allocating it (checkpoint metadata, the planner's formula).
struct StateSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::int64_t elements_per_value = 1;
};

class OptimizerRule {
 public:
  virtual ~OptimizerRule() = default;
  OptimizerRule() = default;
  OptimizerRule(const OptimizerRule&) = delete;
  OptimizerRule& operator=(const OptimizerRule&) = delete;

  // The state tensors this rule keeps, in order.
  virtual std::vector<StateSpec> specs() const = 0;
  // One window of an optimizer range: master (count) f32 updated in place from grads (count) f32;
  // state[k] points at the window's values of specs()[k] (count / elements_per_value of its dtype).
  // `segments` (relative to the window) cover the parameters' elements in it; padding between them
  // is never touched. The window starts at a multiple of optimizer_alignment() and count is one
  // too (the whole range is). `step` is 1-based. The update reads the gradients as grads *
  // grad_scale (the loss-scale division and the clipping factor, applied inside the update rather
  // than by a pass over the gradients; grads are not written).
  virtual void update(const Kernels& kernels, float* master, const float* grads, std::span<std::byte* const> state,
                      std::int64_t count, std::span<const ParamSegment> segments, float lr, std::int64_t step,
                      float grad_scale) const = 0;
};

// Which optimizer the engine runs. AdamW keeps f32 m and v per element (8 bytes); 8-bit AdamW keeps
// them as 8-bit codes with an f32 scale per block (2 bytes + 8 per block).
enum class OptimizerKind { kAdamW, kAdamW8bit };
const char* optimizer_kind_name(OptimizerKind kind);  // "adamw", "adamw8bit"
// "adamw" (or "adam"), "adamw8bit"; anything else throws SettingError("optimizer.kind").
OptimizerKind parse_optimizer_kind(const std::string& text);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdamW;
  AdamWConfig adamw;
  std::int64_t block_size = 2048;  // 8-bit AdamW: elements per quantization block (256 or 2048)

  // Throws SettingError ("optimizer.block_size") for a block size 8-bit AdamW does not take.
  void validate() const;
};

// The state tensors `config` keeps, in order.
std::vector<StateSpec> optimizer_state_specs(const OptimizerConfig& config);
// Bytes of optimizer state for `count` elements of an optimizer range (per-block values counted for
// every started block).
std::int64_t optimizer_state_bytes(const OptimizerConfig& config, std::int64_t count);
// State bytes per element, for formulas (AdamW: 8; 8-bit AdamW with blocks of 2048: 2.0039).
double optimizer_state_bytes_per_element(const OptimizerConfig& config);
// What every optimizer range must be a multiple of: 1, or the quantization block (so no block
// straddles two ranks' shards and blocks sit at the same flat positions at any rank count).
std::int64_t optimizer_alignment(const OptimizerConfig& config);

// The update rule of `config` (validated).
std::unique_ptr<OptimizerRule> make_optimizer_rule(const OptimizerConfig& config);

}  // namespace tessera
