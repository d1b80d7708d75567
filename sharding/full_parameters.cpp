// Assembles full parameters by all-gathering each unit's f32 master shard.
#include "tessera/sharding/full_parameters.hpp"

#include "tessera/sharding/staged_collectives.hpp"

namespace tessera {

std::map<std::string, std::vector<float>> gather_full_parameters(ShardedEngine& engine) {
  std::map<std::string, std::vector<float>> out;
  const auto& units = engine.units();
  for (std::size_t u = 0; u < units.size(); ++u) {
    const FlatLayout& layout = units[u]->layout();
    std::vector<float> mine(static_cast<std::size_t>(units[u]->optimizer_range().count));
    units[u]->read_state(0, 0, static_cast<std::int64_t>(mine.size()), mine.data());  // the f32 master
    std::vector<float> flat(static_cast<std::size_t>(layout.padded_numel()));
    if (units[u]->optimizer_range().count == layout.padded_numel()) {
      flat = mine;  // the optimizer range is the whole buffer (stage 0, or one rank)
    } else {
      all_gather_host(engine.device(), engine.shard_group(), ConstSpan(mine.data(), mine.size()),
                      Span(flat.data(), flat.size()), DType::kF32);
    }
    for (const FlatEntry& e : layout.entries()) {
      out[e.name].assign(flat.begin() + e.offset, flat.begin() + e.offset + e.numel);
    }
  }
  return out;
}

}  // namespace tessera
