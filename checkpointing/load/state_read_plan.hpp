// StateReadPlan: where each value of the new units' optimizer ranges comes from in an old
// checkpoint's shard files, as (shard file, old unit) -> element runs. Two ways to find them:
//  * by parameter — every parameter's elements are found by name through the old layout, so any
//    rank count, padding, unit policy or tensor-parallel size reshards (element-wise state: the
//    master, AdamW's m, v): each run of this rank's elements in the whole tensor is read from the
//    stored pieces that hold it;
//  * by position — the new range's blocks are read from the same flat positions of the old unit
//    of the same name. Block-quantized state (8-bit moments and their per-block scales) is tied to
//    its blocks, so it reshards across rank counts and stages but needs the same units.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_layout.hpp"
#include "tessera/sharding/flat_param_unit.hpp"

namespace tessera {

// Elements [begin, begin + count) of the old (shard, unit) dataset go to elements
// [target, target + count) of new unit `unit`'s optimizer range.
struct StateRequest {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  std::size_t unit = 0;
  std::int64_t target = 0;
};

struct StateReadPlan {
  std::map<int, std::map<int, std::vector<StateRequest>>> reads;  // shard -> old unit -> runs
  std::vector<std::int64_t> covered;  // per new unit: elements of its range the reads cover, from its start
};

StateReadPlan plan_reads_by_parameter(const CheckpointLayout& old,
                                      const std::vector<std::unique_ptr<FlatParamUnit>>& units);

// Throws CheckpointError(kConfigMismatch) naming the unit when the old checkpoint has no unit of
// that name with the same parameters at the same offsets (of the same tensor-parallel rank `tp_rank`
// of `tp`: block-quantized state does not move between ranks). `alignment`: the block size.
StateReadPlan plan_reads_by_position(const CheckpointLayout& old,
                                     const std::vector<std::unique_ptr<FlatParamUnit>>& units, std::int64_t alignment,
                                     const std::string& where, int tp_rank = 0, int tp = 1);

}  // namespace tessera
