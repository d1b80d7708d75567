// choose_collective_topology: the same collectives timed on both communicators.
#include "tessera/comm/hierarchical/collective_topology.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "tessera/core/setting_error.hpp"

namespace tessera {
namespace {

// Seconds for one round on `comm`, the slowest rank's (agreed over `flat`).
double round_seconds(Communicator& comm, Communicator& flat, std::vector<float>& buf) {
  const std::size_t per_rank = buf.size() / static_cast<std::size_t>(comm.size());
  std::vector<float> part(per_rank);
  const auto round = [&] {
    comm.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();
    comm.reduce_scatter(ConstSpan(buf.data(), per_rank * comm.size()), part, DType::kF32, ReduceOp::kSum).wait();
    comm.all_gather(part, Span(buf.data(), per_rank * comm.size()), DType::kF32).wait();
  };
  round();  // warm-up: connections and buffers
  flat.barrier().wait();
  const auto start = std::chrono::steady_clock::now();
  round();
  float seconds = std::chrono::duration<float>(std::chrono::steady_clock::now() - start).count();
  flat.all_reduce(Span(&seconds, 1), DType::kF32, ReduceOp::kMax).wait();
  return seconds;
}

}  // namespace

CollectiveTopology parse_collective_topology(const std::string& text) {
  if (text == "auto") return CollectiveTopology::kAuto;
  if (text == "flat") return CollectiveTopology::kFlat;
  if (text == "two-level") return CollectiveTopology::kTwoLevel;
  throw SettingError("comm.collectives", text, "must be auto, flat or two-level");
}

const char* collective_topology_name(CollectiveTopology topology) {
  switch (topology) {
    case CollectiveTopology::kAuto: return "auto";
    case CollectiveTopology::kFlat: return "flat";
    case CollectiveTopology::kTwoLevel: return "two-level";
  }
  return "?";
}

std::string TopologyChoice::describe() const {
  std::string text = chosen == CollectiveTopology::kTwoLevel ? "two-level (inside each node, then across nodes)"
                                                             : "flat (all ranks at once, in rank order)";
  if (measured) {
    char timing[160];
    const double faster = chosen == CollectiveTopology::kTwoLevel ? two_level_seconds : flat_seconds;
    const double slower = chosen == CollectiveTopology::kTwoLevel ? flat_seconds : two_level_seconds;
    std::snprintf(timing, sizeof timing,
                  ": all-reduce, reduce-scatter and all-gather of %.1f MB in %.1f ms against %.1f ms %s",
                  static_cast<double>(probe_bytes) / 1e6, faster * 1e3, slower * 1e3,
                  chosen == CollectiveTopology::kTwoLevel ? "flat" : "two-level");
    text += timing;
  }
  return text;
}

TopologyChoice choose_collective_topology(CollectiveTopology requested, Communicator& flat, Communicator& two_level,
                                          std::size_t probe_bytes) {
  TopologyChoice choice;
  if (requested != CollectiveTopology::kAuto) {
    choice.chosen = requested;
    return choice;
  }
  const std::size_t ranks = static_cast<std::size_t>(flat.size());
  const std::size_t count = std::max<std::size_t>(probe_bytes / sizeof(float) / ranks, 1) * ranks;
  std::vector<float> buf(count, 1.0f);
  choice.measured = true;
  choice.probe_bytes = count * sizeof(float);
  choice.flat_seconds = round_seconds(flat, flat, buf);
  choice.two_level_seconds = round_seconds(two_level, flat, buf);
  choice.chosen =
      choice.two_level_seconds < choice.flat_seconds ? CollectiveTopology::kTwoLevel : CollectiveTopology::kFlat;
  return choice;
}

}  // namespace tessera
