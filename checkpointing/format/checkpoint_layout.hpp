// CheckpointLayout: how a sharded model's state is cut into shard files — the units (flat buffers),
// every parameter's (unit, offset, shape) inside them, and the number of shard files. A unit's
// flat buffer of `numel` elements is padded to shard_numel * shard_ranks; shard file r holds
// elements [r * shard_numel, (r + 1) * shard_numel) of every unit, for every state tensor the
// engine declares (the f32 master weights, then the optimizer's: AdamW's exp_avg and exp_avg_sq).
//
// Offsets within a unit depend only on the order of its parameters, never on the rank count, so a
// parameter's values can be located in a checkpoint written at any rank count, stage or unit policy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/model/optim/optimizer_state.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {

class ShardedEngine;

struct UnitRecord {
  std::string name;  // "embed", "h.0", ... ("<root>" for parameters under no unit module)
  std::int64_t numel = 0;
  std::int64_t shard_numel = 0;
};

struct ParamRecord {
  std::string name;  // full parameter name, "h.3.attn.qkv.weight"
  Shape shape;
  int unit = 0;             // index into CheckpointLayout::units
  std::int64_t offset = 0;  // elements, within the unit's flat buffer
  std::int64_t numel() const { return shape_numel(shape); }
};

// `count` elements starting at element `begin` of shard file `shard`'s dataset of one unit.
struct ShardPiece {
  int shard = 0;
  std::int64_t begin = 0;
  std::int64_t count = 0;
};

struct CheckpointLayout {
  int shard_ranks = 1;  // shard files
  std::vector<UnitRecord> units;
  std::vector<ParamRecord> params;
  // The datasets of every unit in every shard file, in order: "master" (f32) first, then the
  // optimizer's state tensors, each element for element over the unit's flat buffer.
  std::vector<StateSpec> states;
  // The optimizer's alignment (1, or its quantization block): shards are whole blocks, and its
  // state is read back by position (state_read_plan.hpp).
  std::int64_t state_alignment = 1;

  // The layout the engine's units have (shard files = its shard group size).
  static CheckpointLayout of_engine(ShardedEngine& engine);

  const ParamRecord* find_param(const std::string& name) const;  // nullptr when absent
  // The pieces (in order) that hold elements [begin, end) of unit `unit`'s flat buffer.
  std::vector<ShardPiece> locate(int unit, std::int64_t begin, std::int64_t end) const;
  std::int64_t parameter_count() const;  // sum of parameter numels
  std::int64_t padded_elements() const;  // sum over units of shard_numel * shard_ranks
  std::int64_t state_bytes() const;      // of every state over every unit's padded buffer
};

// Throws CheckpointError(kCorruptData) naming `where` unless the layout is consistent: units of
// non-negative size whose shard_numel * shard_ranks covers them, unique unit and parameter names,
// every parameter inside its unit with non-negative dims, no two parameters of a unit overlapping,
// shards that are whole alignment blocks. What meta.h5's reader runs on every layout it reads.
void check_layout_structure(const CheckpointLayout& layout, const std::string& where);

// Throws CheckpointError(kConfigMismatch) unless `stored` holds the state tensors `current` needs
// (same names, dtypes, values per element and alignment: a checkpoint of another optimizer, or of
// 8-bit AdamW with another block size, cannot resume this one). A `current` of the master alone (an
// inference engine) takes the master of any checkpoint.
void check_same_states(const CheckpointLayout& stored, const CheckpointLayout& current, const std::string& where);

// Throws CheckpointError(kConfigMismatch) unless `stored` holds exactly the parameters of
// `current` with the same shapes; the message names the parameter, both shapes and `where`.
void check_same_parameters(const CheckpointLayout& stored, const CheckpointLayout& current, const std::string& where);

}  // namespace tessera
