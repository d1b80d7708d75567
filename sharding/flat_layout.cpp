// FlatLayout: offsets, shard ranges, parameter segments and initial images.
#include "tessera/sharding/flat_layout.hpp"

#include <algorithm>

namespace tessera {

FlatLayout::FlatLayout(const std::vector<NamedParameter>& parameters, int shard_ranks, int shard_rank,
                       std::int64_t alignment)
    : shard_ranks_(shard_ranks), shard_rank_(shard_rank) {
  for (const NamedParameter& np : parameters) {
    entries_.push_back({np.name, np.parameter, numel_, np.parameter->numel()});
    numel_ += np.parameter->numel();
  }
  shard_numel_ = (numel_ + shard_ranks - 1) / shard_ranks;
  shard_numel_ = (shard_numel_ + alignment - 1) / alignment * alignment;
}

std::vector<ParamSegment> FlatLayout::segments(FlatRange range) const {
  std::vector<ParamSegment> out;
  for (const FlatEntry& e : entries_) {
    const std::int64_t lo = std::max(range.begin, e.offset), hi = std::min(range.end(), e.offset + e.numel);
    if (lo < hi) out.push_back({lo - range.begin, hi - lo, e.parameter->decay});
  }
  return out;
}

std::vector<float> FlatLayout::initial_image(FlatRange range, std::uint64_t seed) const {
  std::vector<float> image(static_cast<std::size_t>(range.count), 0.0f), values;
  for (const FlatEntry& e : entries_) {
    const std::int64_t lo = std::max(range.begin, e.offset), hi = std::min(range.end(), e.offset + e.numel);
    if (lo >= hi) continue;
    initial_values(*e.parameter, e.name, seed, values);
    std::copy(values.begin() + (lo - e.offset), values.begin() + (hi - e.offset), image.begin() + (lo - range.begin));
  }
  return image;
}

}  // namespace tessera
