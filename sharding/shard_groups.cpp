// make_shard_groups: consecutive-rank hybrid groups by splitting the world.
#include "tessera/sharding/shard_groups.hpp"

#include "tessera/core/setting_error.hpp"

namespace tessera {

ShardGroups make_shard_groups(Communicator& world, ZeroStage stage, int hybrid_group) {
  const int h = hybrid_group;
  if (h < 0 || (h > 0 && world.size() % h != 0)) {
    throw SettingError(
        "sharding.hybrid_group", std::to_string(h),
        "must divide the number of ranks " + std::to_string(world.size()) + " (ranks are grouped consecutively)");
  }
  ShardGroups groups;
  groups.shard = &world;
  if (stage != ZeroStage::kStage0 && h > 0 && h < world.size()) {
    groups.owned_shard = world.split(world.rank() / h, world.rank());
    groups.owned_replicate = world.split(world.rank() % h, world.rank());
    groups.shard = groups.owned_shard.get();
    groups.replicate = groups.owned_replicate.get();
  }
  return groups;
}

}  // namespace tessera
