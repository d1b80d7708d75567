// SimEngine: the shadow of ShardedEngine (sharding/sharded_engine.cpp) driving the GPT shadow.
// It keeps the engine's schedule state — which units are gathered, the gathers in flight (at most
// prefetch_units ahead, in the order recorded by the first forward and backward), the users of each
// unit (the tied embedding is used by embed and head, so its gathered parameters and full gradient
// live through the whole backward), and at most two gradient reductions in flight — and calls the
// SimFlatUnits as the engine calls its FlatParamUnits. Units follow the default policy: embed,
// h.0 .. h.{L-1}, ln_f; the head owns nothing and uses embed's unit.
//
// A phase observer hears the same phase names as ShardedEngine's ("forward h.3", "loss",
// "backward head", "step"), so a predicted timeline lines up with a measured one.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "planning/sim_flat_unit.hpp"
#include "planning/sim_module.hpp"
#include "runtime/recompute/activation_checkpointing.hpp"
#include "runtime/modules/gpt.hpp"
#include "sharding/sharded_engine.hpp"

namespace tessera {

struct SimEngineConfig {
  GptConfig model;
  CheckpointPolicy checkpointing;
  ZeroStage stage = ZeroStage::kStage0;
  MixedPrecision precision;
  DType grad_dtype = DType::kF32;
  int shard_ranks = 1;
  int prefetch_units = 1;
  bool reshard_after_forward = true;
  SimUnitPlacement placement;
};

class SimEngine {
 public:
  using PhaseObserver = std::function<void(const std::string& phase)>;

  // Allocates every unit's persistent state on `device` (offloaded state on `offloaded`).
  SimEngine(const SimEngineConfig& config, MemoryTracker& device, MemoryTracker& offloaded);
  ~SimEngine();
  SimEngine(const SimEngine&) = delete;
  SimEngine& operator=(const SimEngine&) = delete;

  void set_phase_observer(PhaseObserver observer) { observer_ = std::move(observer); }
  const std::vector<std::unique_ptr<SimFlatUnit>>& units() const { return units_; }

  // One ShardedEngine::train_step over `inputs.size()` micro-batches: tokens and targets (B,T) i32,
  // held by the caller.
  void train_step(const std::vector<SimTensor>& inputs, const std::vector<SimTensor>& targets);

  // Hooks the unit-module shadows call (ShardedEngine's before/after_forward/backward).
  void before_forward(const std::vector<int>& units);
  void after_forward(const std::vector<int>& units, const std::string& module);
  void before_backward(const std::vector<int>& units);
  void after_backward(const std::vector<int>& units, const std::string& module);

 private:
  class UnitModule;

  SimTensor forward(SimContext& ctx, const SimTensor& tokens);
  void backward(SimContext& ctx, SimTensor dlogits, GradSync sync);
  void step();
  void notify(const std::string& phase);
  void ensure_params(int unit);
  void prefetch(std::vector<int>& order, std::size_t& cursor, int unit);
  void finish_oldest_reduce();
  void finish_all_reduces();

  SimEngineConfig config_;
  MemoryTracker& device_;
  std::vector<std::unique_ptr<SimFlatUnit>> units_;
  std::vector<std::unique_ptr<SimModule>> modules_;  // embed, h.0.., ln_f, head: forward order
  std::vector<int> users_, pending_backward_;
  std::vector<int> gathers_;
  std::deque<int> reduces_;
  GradSync sync_ = GradSync::kReduce;
  std::vector<int> forward_order_, backward_order_;
  bool recording_forward_ = true, recording_backward_ = true;
  std::size_t forward_cursor_ = 0, backward_cursor_ = 0;
  PhaseObserver observer_;
};

}  // namespace tessera
