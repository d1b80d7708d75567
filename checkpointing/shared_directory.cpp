// check_directory_shared: a token file written by rank 0 and read back by every rank.
#include "tessera/checkpointing/shared_directory.hpp"

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "tessera/checkpointing/rank_hosts.hpp"
#include "tessera/comm/host_collectives.hpp"
#include "tessera/core/setting_error.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

constexpr const char* kProbePrefix = ".tessera_shared_probe_";
constexpr auto kVisibilityWait = std::chrono::seconds(3);

std::string read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

// True once `path` holds `token`, waiting up to kVisibilityWait for it to appear.
bool sees_token(const fs::path& path, const std::string& token) {
  const auto give_up = std::chrono::steady_clock::now() + kVisibilityWait;
  while (true) {
    if (read_whole(path) == token) return true;
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

void check_directory_shared(const fs::path& dir, Communicator& world) {
  if (world.size() == 1) return;
  std::string token;
  if (world.rank() == 0) {
    std::random_device entropy;
    token = std::to_string(entropy()) + "-" + std::to_string(entropy()) + "-" +
            std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  }
  token = broadcast_string(world, token, 0);
  const fs::path probe = dir / (kProbePrefix + token);
  std::uint8_t written = 1;
  if (world.rank() == 0) {
    std::ofstream out(probe, std::ios::binary | std::ios::trunc);
    out << token;
    out.close();
    written = out ? 1 : 0;
  }
  if (broadcast_value<std::uint8_t>(world, written, 0) == 0) {
    throw SettingError("checkpoint.dir", dir.string(),
                       "rank 0 cannot write a file into it; choose a writable directory");
  }
  const std::uint8_t seen = world.rank() == 0 || sees_token(probe, token) ? 1 : 0;
  const std::vector<std::uint8_t> all_seen = all_gather_values(world, seen);
  if (world.rank() == 0) {
    std::error_code ignored;
    fs::remove(probe, ignored);
  }
  std::vector<int> blind;
  for (int r = 0; r < world.size(); ++r) {
    if (all_seen[static_cast<std::size_t>(r)] == 0) blind.push_back(r);
  }
  if (blind.empty()) return;
  const std::vector<std::string> hosts = gather_host_names(world);  // every rank knows of the failure
  throw SettingError(
      "checkpoint.dir", dir.string(),
      "is not the same directory on every node: " + ranks_with_hosts(blind, hosts) +
          (blind.size() == 1 ? " does" : " do") + " not see the file " + ranks_with_hosts({0}, hosts) +
          " wrote there (a node-local disk under the same path?). Every rank writes its own shard into it and a "
          "resume reads them all; use a directory on a file system every node mounts (NFS, Lustre, ...)");
}

}  // namespace tessera
