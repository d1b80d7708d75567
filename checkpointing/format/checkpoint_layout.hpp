// CheckpointLayout: how a sharded model's state is cut into shard files — the units (flat buffers),
// every parameter's (unit, offset, shape) inside them, and the number of shard files. A unit's
// flat buffer of `numel` elements is padded to shard_numel * shard_ranks; shard file r holds
// elements [r * shard_numel, (r + 1) * shard_numel) of every unit, for every state tensor the
// engine declares (the f32 master weights, then the optimizer's: AdamW's exp_avg and exp_avg_sq).
//
// Offsets within a unit depend only on the order of its parameters, never on the rank count, so a
// parameter's values can be located in a checkpoint written at any rank count, stage or unit policy.
//
// Tensor parallelism (tp > 1): every rank of a tensor-parallel group has units of its own, holding
// its pieces of the split parameters (ParamRecord::slice) and its copy of the replicated ones. The
// layout lists the units of every group rank (UnitRecord::tp_rank; the files of group rank t are
// shard files [t S, (t+1) S), S = shard_ranks / tp), each split parameter once per piece under its
// global name, and each replicated parameter once (group rank 0's copy). A parameter is found by
// name and read piece by piece into whatever pieces the reading run holds (any tp, rank count,
// stage or unit policy); meta.h5's /model/<name> shows the whole tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/model/optim/optimizer_state.hpp"
#include "tessera/model/parallel/tensor_slice.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {

class ShardedEngine;

struct UnitRecord {
  std::string name;  // "embed", "h.0", ... ("<root>" for parameters under no unit module)
  std::int64_t numel = 0;
  std::int64_t shard_numel = 0;
  int tp_rank = 0;  // the tensor-parallel rank whose unit it is
};

struct ParamRecord {
  std::string name;         // full parameter name, "h.3.attn.qkv.weight"
  Shape shape;              // as stored: the piece's shape when split
  int unit = 0;             // index into CheckpointLayout::units
  std::int64_t offset = 0;  // elements, within the unit's flat buffer
  TensorSlice slice = {};   // the piece of the whole tensor (parts 1: the whole tensor)
  std::int64_t numel() const { return shape_numel(shape); }
  Shape full_shape() const { return global_shape(shape, slice); }
};

// `count` elements starting at element `begin` of shard file `shard`'s dataset of one unit.
struct ShardPiece {
  int shard = 0;
  std::int64_t begin = 0;
  std::int64_t count = 0;
};

struct CheckpointLayout {
  int shard_ranks = 1;  // shard files
  int tp = 1;           // tensor-parallel ranks (each with shard_ranks / tp files)
  std::vector<UnitRecord> units;
  std::vector<ParamRecord> params;
  // The datasets of every unit in every shard file, in order: "master" (f32) first, then the
  // optimizer's state tensors, each element for element over the unit's flat buffer.
  std::vector<StateSpec> states;
  // The optimizer's alignment (1, or its quantization block): shards are whole blocks, and its
  // state is read back by position (state_read_plan.hpp).
  std::int64_t state_alignment = 1;

  // The layout the engine's units have (shard files = its shard group size, times the
  // tensor-parallel group's: only this group rank's units are listed, those of the other ranks come
  // from them, add_tensor_parallel_rank).
  static CheckpointLayout of_engine(ShardedEngine& engine);
  // Adds the units and parameter pieces of another tensor-parallel rank's layout (`other`, of_engine
  // on that rank); its replicated parameters are this layout's already and are not listed again.
  void add_tensor_parallel_rank(const CheckpointLayout& other);

  const ParamRecord* find_param(const std::string& name) const;  // the first piece; nullptr when absent
  // Every record of the parameter: its pieces (in tensor-parallel rank order), or the one record.
  std::vector<const ParamRecord*> pieces_of(const std::string& name) const;
  int shards_per_tp_rank() const { return shard_ranks / tp; }
  // The pieces (in order) that hold elements [begin, end) of unit `unit`'s flat buffer.
  std::vector<ShardPiece> locate(int unit, std::int64_t begin, std::int64_t end) const;
  std::int64_t parameter_count() const;  // sum of parameter numels (the whole tensors')
  std::int64_t padded_elements() const;  // sum over units of shard_numel * shards_per_tp_rank()
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
// `current` with the same (whole) shapes; the message names the parameter, both shapes and `where`.
void check_same_parameters(const CheckpointLayout& stored, const CheckpointLayout& current, const std::string& where);

// The layout as JSON text and back, for handing a tensor-parallel rank's layout to the rank that
// writes meta.h5 (layout_from_json throws CheckpointError(kCorruptData) on text it cannot read).
std::string layout_to_json(const CheckpointLayout& layout);
CheckpointLayout layout_from_json(const std::string& text);

}  // namespace tessera
