// ChaosSchedule: a seeded, reproducible list of interruptions for a training job on the simulated
// nodes, and where each restart comes back. Each interruption has a kind (what is killed and when),
// how many steps the segment it ends trains at least before it strikes, the rank or node it hits,
// and the placement of the job it interrupts (the first job starts on both nodes; a restart may come
// back on both nodes mapped by slot or by node, or on either node alone). Given the same seed and
// mix, the schedule is the same list.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/core/random.hpp"

namespace tessera::testing {

enum class Interruption {
  kRankKill,           // kill -9 of one rank mid-step
  kNodeKill,           // kill -9 of every process of a node at once (the node is lost)
  kLinkDown,           // a node's link taken down while its ranks are in their collectives
  kDuringSave,         // kill -9 while an asynchronous save writes step_N.tmp
  kDuringRetention,    // kill -9 of rank 0 as `latest` moves (retention runs right after)
  kDuringOffloadWrite  // kill -9 of a rank as its NVMe offload file is written in a step
};

inline const char* interruption_name(Interruption kind) {
  switch (kind) {
    case Interruption::kRankKill: return "kill -9 of one rank";
    case Interruption::kNodeKill: return "a whole node lost";
    case Interruption::kLinkDown: return "a node's link down";
    case Interruption::kDuringSave: return "kill -9 during an async save";
    case Interruption::kDuringRetention: return "kill -9 during retention";
    case Interruption::kDuringOffloadWrite: return "kill -9 during an offload write";
  }
  return "?";
}

// Where a job runs: `hosts` as mpirun's --host takes it, its rank count and --map-by.
struct Placement {
  std::string hosts;
  int ranks = 4;
  std::string map_by = "slot";
  std::string label() const { return hosts + " (" + std::to_string(ranks) + " ranks, by " + map_by + ")"; }
  bool two_nodes() const { return hosts.find(',') != std::string::npos; }
};

struct PlannedInterruption {
  Interruption kind;
  int min_steps;        // steps the interrupted job trains (past where it started) before the trigger is armed
  int rank;             // the rank killed (rank kills, saves, offload writes; -1: the whole job during a save)
  std::string node;     // the node lost (node kills, links)
  Placement placement;  // of the job this interrupts
};

// `counts`: how many of each kind, shuffled into one order by `seed`. `placements`: where restarts
// may come back (drawn per job, or with `in_turn` the later placements one after another; the first
// job takes placements[0]); a link taken down needs a job on two nodes, so such a job always gets
// placements[0].
inline std::vector<PlannedInterruption> chaos_schedule(std::uint64_t seed, const std::map<Interruption, int>& counts,
                                                       const std::vector<Placement>& placements, bool in_turn = false) {
  Rng rng(seed);
  std::vector<Interruption> kinds;
  for (const auto& [kind, count] : counts) kinds.insert(kinds.end(), count, kind);
  for (std::size_t i = kinds.size(); i > 1; --i) std::swap(kinds[i - 1], kinds[rng.below(i)]);
  std::vector<PlannedInterruption> plan;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    PlannedInterruption p{kinds[i], 0, 0, "", placements[0]};
    if (i > 0 && p.kind != Interruption::kLinkDown) {
      p.placement =
          in_turn ? placements[1 + (i - 1) % (placements.size() - 1)] : placements[rng.below(placements.size())];
    }
    p.min_steps = 4 + static_cast<int>(rng.below(14));
    p.rank = static_cast<int>(rng.below(static_cast<std::uint64_t>(p.placement.ranks)));
    if (p.kind == Interruption::kDuringSave && rng.below(3) == 0) p.rank = -1;
    if (p.kind == Interruption::kDuringRetention) p.rank = 0;  // rank 0 commits and applies --keep-last
    p.node = p.kind == Interruption::kLinkDown ? "n2" : (rng.below(2) == 0 ? "n1" : "n2");
    if (p.kind == Interruption::kNodeKill && !p.placement.two_nodes()) p.node = p.placement.hosts.substr(0, 2);
    plan.push_back(p);
  }
  return plan;
}

}  // namespace tessera::testing
