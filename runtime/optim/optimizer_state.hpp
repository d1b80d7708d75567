// OptimizerState: the state an optimizer keeps for one contiguous range of a flat parameter buffer
// (a sharding unit's optimizer range: the whole unit at ZeRO-0, this rank's shard otherwise), and
// its update. The engine owns the f32 master weights and the reduced f32 gradients of the range;
// the optimizer owns everything else (AdamW: m and v) and says what it is, by name and dtype, so
// checkpoints and the memory planner handle any optimizer without knowing it.
//
// Who calls what: the engine makes one OptimizerState per unit (make_optimizer_state), calls
// step() once per optimizer step with that unit's master and gradients, and reads state() to save
// or restore it. A later implementation may keep its tensors elsewhere (quantised, in host memory,
// in files) and stream them in and out inside step(): the engine steps unit by unit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "precision/dtype.hpp"
#include "runtime/memory_kind.hpp"
#include "runtime/optim/adamw.hpp"
#include "runtime/param_segment.hpp"
#include "runtime/tensor.hpp"

namespace tessera {

class Device;
class Kernels;

// One named state tensor over the optimizer range: one value per `elements_per_value` elements of
// the range (1: element for element; a block size: one value per block, e.g. a quantization scale).
struct StateTensor {
  std::string name;  // "exp_avg", also the checkpoint dataset name
  Tensor tensor;     // (count / elements_per_value) of its dtype, on the device (or its memory kind)
  std::int64_t elements_per_value = 1;
};

// What a state tensor is, without allocating it (checkpoint metadata, the planner's formula).
struct StateSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::int64_t elements_per_value = 1;
};

class OptimizerState {
 public:
  virtual ~OptimizerState() = default;
  OptimizerState() = default;
  OptimizerState(const OptimizerState&) = delete;
  OptimizerState& operator=(const OptimizerState&) = delete;

  // master (count) f32 updated in place from grads (count) f32, over `segments` (they cover the
  // parameters' elements of the range; padding between them is never touched). `step` is 1-based.
  virtual void step(const Kernels& kernels, Tensor& master, const Tensor& grads, std::span<const ParamSegment> segments,
                    float lr, std::int64_t step) = 0;
  // The state tensors, in the order of the optimizer's specs().
  virtual std::vector<StateTensor> state() const = 0;
  // Back to the state of a fresh optimizer (zeros for AdamW).
  virtual void reset() = 0;
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

// State for `count` elements on `device`, allocated as memory `memory` (category kOptimizerState),
// zero-initialised.
std::unique_ptr<OptimizerState> make_optimizer_state(const OptimizerConfig& config, Device& device,
                                                     std::int64_t count, MemoryKind memory);

}  // namespace tessera
