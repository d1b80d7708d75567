// ShardGroups: the communicators a ShardedEngine shards and replicates over. make_shard_groups
// splits the world for hybrid sharding (HSDP: shard within groups of `hybrid_group` ranks,
// replicate across them). Groups follow the nodes: ranks are taken node by node (in rank order
// within a node), so a group of a node's size is that node under any launcher placement, and a
// group that would take part of one node and part of another is refused. A caller may also build
// the groups itself (the memory planner uses loopback communicators that stand for one rank of
// each group).
#pragma once

#include <memory>

#include "tessera/comm/communicator.hpp"
#include "tessera/comm/node_layout.hpp"
#include "tessera/sharding/placement.hpp"

namespace tessera {

struct ShardGroups {
  Communicator* shard = nullptr;                               // ranks that shard model state together
  Communicator* replicate = nullptr;                           // ranks holding the same shard (hybrid), or null
  // The tensor-parallel group whose ranks hold the other pieces of this rank's split parameters
  // (Parameter::slice), or null: the gradient norm adds their pieces and counts replicated ones once.
  Communicator* tensor = nullptr;
  std::unique_ptr<Communicator> owned_shard, owned_replicate;  // when made by splitting
};

// Collective over `world` when it splits (stages 1-3 with 0 < hybrid_group < world size): every
// rank must call it at the same point. `nodes`: the world's node layout (empty: one node). Throws
// SettingError("sharding.hybrid_group") when the group size does not divide the number of ranks, or
// when a group would straddle nodes without taking them whole.
ShardGroups make_shard_groups(Communicator& world, ZeroStage stage, int hybrid_group, const NodeLayout& nodes = {});

// The hybrid group of one node (HSDP's layout: shard within a node, replicate across nodes): the
// ranks per node. Throws SettingError("sharding.hybrid_group", "node") when nodes hold different
// numbers of ranks, naming them.
int node_hybrid_group(const NodeLayout& nodes);

}  // namespace tessera
