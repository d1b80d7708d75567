// Settings agreed across ranks: one digest all-gathered, the values exchanged only when they differ.
#include "tessera/run/settings_agreement.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "tessera/checkpointing/format/checksum.hpp"
#include "tessera/comm/host_collectives.hpp"
#include "tessera/core/parse_number.hpp"

namespace tessera {
namespace {

constexpr std::size_t kMaxListed = 8;
constexpr std::uint64_t kSeed = 0x5e771e55;

std::string serialize(const SettingList& settings) {
  std::string text;
  for (const auto& [name, value] : settings) {
    text += std::to_string(name.size()) + ":" + name + std::to_string(value.size()) + ":" + value + "\n";
  }
  return text;
}

// "rank 0, 2: 0.001; rank 1: 0.002" (ranks grouped by value; "(not set)" where a rank lacks it);
// "" when every rank has the same.
std::string by_value(const std::vector<std::map<std::string, std::string>>& per_rank, const std::string& name) {
  std::vector<std::pair<std::string, std::vector<int>>> ranks_of;  // by each value's lowest rank
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    const auto it = per_rank[r].find(name);
    const std::string value = it == per_rank[r].end() ? std::string("(not set)") : quote_excerpt(it->second);
    auto group = std::find_if(ranks_of.begin(), ranks_of.end(), [&](const auto& g) { return g.first == value; });
    if (group == ranks_of.end()) group = ranks_of.insert(ranks_of.end(), {value, {}});
    group->second.push_back(static_cast<int>(r));
  }
  if (ranks_of.size() == 1) return "";
  std::string text;
  for (const auto& [value, ranks] : ranks_of) {
    text += text.empty() ? "" : "; ";
    text += ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
    text += ": " + value;
  }
  return text;
}

}  // namespace

void check_settings_agree(Communicator& world, const SettingList& settings, const SettingNames& names) {
  const std::string mine = serialize(settings);
  const std::uint64_t digest = xxh64(mine.data(), mine.size(), kSeed);
  const std::vector<std::uint64_t> digests = all_gather_values(world, digest);
  bool same = true;
  for (std::uint64_t d : digests) same = same && d == digests.front();
  if (same) return;
  // Rare: every rank learns every rank's list (one broadcast per rank) and words the same message.
  std::vector<std::map<std::string, std::string>> per_rank(static_cast<std::size_t>(world.size()));
  std::vector<std::string> order;  // first appearance, rank by rank
  std::set<std::string> seen;
  for (int r = 0; r < world.size(); ++r) {
    const std::string text = broadcast_string(world, world.rank() == r ? mine : std::string(), r);
    std::size_t at = 0;
    while (at < text.size()) {
      std::string field[2];
      for (std::string& f : field) {
        const std::size_t colon = text.find(':', at);
        const std::size_t length = std::stoull(text.substr(at, colon - at));
        f = text.substr(colon + 1, length);
        at = colon + 1 + length;
      }
      ++at;  // '\n'
      per_rank[static_cast<std::size_t>(r)][field[0]] = field[1];
      if (seen.insert(field[0]).second) order.push_back(field[0]);
    }
  }
  // The program's flags ("--lr") when any of them differ: the library's settings that differ with
  // them ("run.lr") are their consequences.
  std::vector<std::pair<std::string, std::string>> found;
  bool flags_differ = false;
  for (const std::string& name : order) {
    std::string values = by_value(per_rank, name);
    if (values.empty()) continue;
    flags_differ = flags_differ || name.rfind("--", 0) == 0;
    found.emplace_back(name, std::move(values));
  }
  std::string differing;
  std::size_t listed = 0, total = 0;
  for (const auto& [name, values] : found) {
    if (flags_differ && name.rfind("--", 0) != 0) continue;
    ++total;
    if (listed++ >= kMaxListed) continue;
    differing += (differing.empty() ? "" : " | ") + names.flag_of(name) + ": " + values;
  }
  if (total > kMaxListed) differing += " | and " + std::to_string(total - kMaxListed) + " more";
  throw std::invalid_argument("settings differ across ranks (every rank must run with the same settings; check the "
                              "launch line, per-rank config files and environment): " +
                              differing);
}

}  // namespace tessera
