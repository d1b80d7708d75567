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
  std::vector<float> image(static_cast<std::size_t>(range.count), 0.0f);
  // One parameter per task, each into its own slice of the image: the same values on any number of
  // threads (a parameter's generator is seeded by its name), and a 1.5B model's initialisation
  // spread over the cores instead of one.
  const auto entries = static_cast<std::int64_t>(entries_.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t i = 0; i < entries; ++i) {
    const FlatEntry& e = entries_[static_cast<std::size_t>(i)];
    const std::int64_t lo = std::max(range.begin, e.offset), hi = std::min(range.end(), e.offset + e.numel);
    if (lo >= hi) continue;
    initial_values(*e.parameter, e.name, seed,
                   std::span<float>(image.data() + (lo - range.begin), static_cast<std::size_t>(hi - lo)),
                   lo - e.offset);
  }
  return image;
}

}  // namespace tessera
