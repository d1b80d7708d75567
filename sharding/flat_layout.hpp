// FlatLayout: how one sharding unit's parameters sit in one flat buffer (FSDP's FlatParameter)
// and how that buffer is cut into shards.
//
// Entry i occupies elements [offset_i, offset_i + numel_i), in the order the parameters were
// given; the buffer is padded with zeros to padded_numel = shard_numel * shard_ranks; rank r's
// shard is [r * shard_numel, (r + 1) * shard_numel). Offsets depend only on the parameter order,
// never on the rank count, so a checkpoint finds a parameter at any rank count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/model/module.hpp"
#include "tessera/model/optim/optimizer_state.hpp"

namespace tessera {

struct FlatEntry {
  std::string name;  // full parameter name, "h.3.attn.qkv.weight"
  Parameter* parameter;
  std::int64_t offset;  // elements, within the flat buffer
  std::int64_t numel;
};

// A range of the flat buffer: elements [begin, begin + count).
struct FlatRange {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  std::int64_t end() const { return begin + count; }
};

class FlatLayout {
 public:
  // `parameters` (full names) in order; shard group of `shard_ranks` ranks, this one `shard_rank`;
  // shards a multiple of `alignment` elements.
  FlatLayout(const std::vector<NamedParameter>& parameters, int shard_ranks, int shard_rank,
             std::int64_t alignment = 1);

  const std::vector<FlatEntry>& entries() const { return entries_; }
  std::int64_t numel() const { return numel_; }  // unpadded
  std::int64_t padded_numel() const { return shard_numel_ * shard_ranks_; }
  std::int64_t shard_numel() const { return shard_numel_; }
  std::int64_t shard_begin() const { return shard_numel_ * shard_rank_; }
  int shard_ranks() const { return shard_ranks_; }
  FlatRange full() const { return {0, padded_numel()}; }
  FlatRange shard() const { return {shard_begin(), shard_numel_}; }

  // The parts of every entry inside `range`, in order, as offsets relative to range.begin, with
  // the parameter's weight-decay flag. Padding yields no segment.
  std::vector<ParamSegment> segments(FlatRange range) const;

  // Host image of `range` holding every parameter's initial values for `seed` (as
  // materialize_parameters gives them, whatever the sharding); padding is zero.
  std::vector<float> initial_image(FlatRange range, std::uint64_t seed) const;

 private:
  std::vector<FlatEntry> entries_;
  int shard_ranks_, shard_rank_;
  std::int64_t numel_ = 0, shard_numel_ = 0;
};

}  // namespace tessera
