// ranks_on_node: RankInfo's local size, discovered over the world when not at hand.
#include "tessera/planning/ranks_on_node.hpp"

#include <algorithm>

#include "tessera/launch/launcher_env.hpp"

namespace tessera {

int ranks_on_node(const RankInfo& info) { return std::max(1, info.local_size); }

int ranks_on_node(Communicator& world, const EnvLookup& env) {
  return ranks_on_node(discover_rank_info(world, read_launcher_env(env)));
}

}  // namespace tessera
