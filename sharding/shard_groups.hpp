// ShardGroups: the communicators a ShardedEngine shards and replicates over. make_shard_groups
// splits the world for hybrid sharding (HSDP: shard within groups of `hybrid_group` consecutive
// ranks, replicate across them); a caller may also build the groups itself (the memory planner
// uses loopback communicators that stand for one rank of each group).
#pragma once

#include <memory>

#include "tessera/comm/communicator.hpp"
#include "tessera/sharding/placement.hpp"

namespace tessera {

struct ShardGroups {
  Communicator* shard = nullptr;                               // ranks that shard model state together
  Communicator* replicate = nullptr;                           // ranks holding the same shard (hybrid), or null
  std::unique_ptr<Communicator> owned_shard, owned_replicate;  // when made by splitting
};

// Collective over `world` when it splits (stages 1-3 with 0 < hybrid_group < world size): every
// rank must call it at the same point. Throws SettingError("sharding.hybrid_group") when the group
// size does not divide the number of ranks.
ShardGroups make_shard_groups(Communicator& world, ZeroStage stage, int hybrid_group);

}  // namespace tessera
