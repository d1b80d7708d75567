// discover_rank_info: one all-gather of (launcher values, host name) per rank, then every rank
// derives the same node grouping from the same table.
#include "tessera/launch/rank_info.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "tessera/comm/host_collectives.hpp"

namespace tessera {
namespace {

constexpr std::size_t kHostChars = 64;

// One rank's row of the exchanged table.
struct Row {
  std::int32_t env_launcher;
  std::int32_t env_rank;
  std::int32_t env_size;
  std::int32_t env_node_id;
  std::int32_t host_hash_low;   // FNV-1a of the full host name, so long names that share a
  std::int32_t host_hash_high;  // 64-character prefix still differ
  std::array<char, kHostChars> host;
};

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t hash = 1469598103934665603ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

int RankInfo::device_index(int device_count) const {
  if (device_count <= 0) return -1;
  return local_rank % device_count;
}

std::string RankInfo::describe() const {
  return "rank " + std::to_string(rank) + "/" + std::to_string(world_size) + " (host " + hostname + "): local " +
         std::to_string(local_rank) + "/" + std::to_string(local_size) + ", node " + std::to_string(node_rank) + "/" +
         std::to_string(num_nodes) + ", launched by " + launcher_name(launcher);
}

RankInfo discover_rank_info(Communicator& world, const LauncherEnv& env) {
  RankInfo info;
  info.rank = world.rank();
  info.world_size = world.size();
  info.hostname = this_hostname();

  Row mine{};
  mine.env_launcher = static_cast<std::int32_t>(env.launcher);
  mine.env_rank = env.rank;
  mine.env_size = env.size;
  mine.env_node_id = env.node_id;
  const std::uint64_t hash = fnv1a(info.hostname);
  mine.host_hash_low = static_cast<std::int32_t>(hash & 0xffffffffu);
  mine.host_hash_high = static_cast<std::int32_t>(hash >> 32);
  std::strncpy(mine.host.data(), info.hostname.c_str(), kHostChars - 1);

  const std::vector<Row> rows = all_gather_values(world, mine);

  // Trust the launcher only if it agrees with MPI on every rank, and is the same launcher everywhere.
  bool env_trusted = env.launcher != Launcher::kNone;
  bool node_ids_known = true;
  for (int r = 0; r < info.world_size; ++r) {
    const Row& row = rows[static_cast<std::size_t>(r)];
    env_trusted = env_trusted && row.env_launcher == mine.env_launcher && row.env_rank == r &&
                  (row.env_size == -1 || row.env_size == info.world_size);
    node_ids_known = node_ids_known && row.env_node_id >= 0;
  }
  const bool by_node_id = env_trusted && node_ids_known;
  info.launcher = env_trusted ? env.launcher : Launcher::kNone;

  // Node key per rank, numbered densely in order of first appearance (rank order).
  auto key_of = [&](const Row& row) {
    return by_node_id ? std::to_string(row.env_node_id)
                      : std::string(row.host.data(), strnlen(row.host.data(), kHostChars)) + "#" +
                            std::to_string(row.host_hash_low) + ":" + std::to_string(row.host_hash_high);
  };
  std::map<std::string, int> node_of_key;
  std::vector<int> node_of_rank(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto inserted = node_of_key.emplace(key_of(rows[r]), static_cast<int>(node_of_key.size()));
    node_of_rank[r] = inserted.first->second;
  }
  info.num_nodes = static_cast<int>(node_of_key.size());
  info.nodes.node_of_rank = node_of_rank;
  info.nodes.hosts.resize(node_of_key.size());
  for (std::size_t r = rows.size(); r-- > 0;) {  // each node named by its lowest rank's host
    info.nodes.hosts[static_cast<std::size_t>(node_of_rank[r])] =
        std::string(rows[r].host.data(), strnlen(rows[r].host.data(), kHostChars));
  }
  info.node_rank = node_of_rank[static_cast<std::size_t>(info.rank)];
  info.local_rank = 0;
  info.local_size = 0;
  for (int r = 0; r < info.world_size; ++r) {
    if (node_of_rank[static_cast<std::size_t>(r)] != info.node_rank) continue;
    if (r < info.rank) ++info.local_rank;
    ++info.local_size;
  }
  return info;
}

}  // namespace tessera
