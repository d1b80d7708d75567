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
#include "runtime/tensor.hpp"

namespace tessera {

class Device;
class Kernels;

// A run of one parameter inside the optimizer range: elements [begin, begin + count) of the range
// (not of the flat buffer), and whether weight decay applies to that parameter.
struct ParamSegment {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  bool decay = false;
};

// One named state tensor: (count) elements of the optimizer range, element for element.
struct StateTensor {
  std::string name;  // "exp_avg", also the checkpoint dataset name
  Tensor tensor;     // (count) of its dtype, on the device (or the memory kind it was made in)
};

// What a state tensor is, without allocating it (checkpoint metadata, the planner's formula).
struct StateSpec {
  std::string name;
  DType dtype = DType::kF32;
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

// Which optimizer the engine runs. AdamW keeps f32 m and v per element.
enum class OptimizerKind { kAdamW };
const char* optimizer_kind_name(OptimizerKind kind);  // "adamw"
// "adamw" (or "adam"); anything else throws SettingError("optimizer.kind").
OptimizerKind parse_optimizer_kind(const std::string& text);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdamW;
  AdamWConfig adamw;
};

// The state tensors `kind` keeps, in order.
std::vector<StateSpec> optimizer_state_specs(OptimizerKind kind);
// State bytes per element of the optimizer range (AdamW: 8).
std::int64_t optimizer_state_bytes_per_element(OptimizerKind kind);

// State for `count` elements on `device`, allocated as memory `memory` (category kOptimizerState),
// zero-initialised.
std::unique_ptr<OptimizerState> make_optimizer_state(const OptimizerConfig& config, Device& device,
                                                     std::int64_t count, MemoryKind memory);

}  // namespace tessera
