// Assembles full parameters by all-gathering each unit's f32 master shard.
#include "sharding/full_parameters.hpp"

namespace tessera {

std::map<std::string, std::vector<float>> gather_full_parameters(ShardedEngine& engine) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& unit : engine.units()) {
    std::vector<float> flat(static_cast<std::size_t>(unit->padded_numel()));
    const std::vector<float> mine = unit->master().to_host_f32();
    if (unit->optimizer_numel() == unit->padded_numel()) {
      flat = mine;  // stage 0: the master is already full
    } else {
      engine.shard_group().all_gather(ConstSpan(mine.data(), mine.size()), Span(flat.data(), flat.size()),
                                      DType::kF32).wait();
    }
    for (const FlatEntry& e : unit->entries()) {
      out[e.name].assign(flat.begin() + e.offset, flat.begin() + e.offset + e.numel);
    }
  }
  return out;
}

}  // namespace tessera
