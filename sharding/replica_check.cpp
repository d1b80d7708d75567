// Replica check: XXH3-64 of every replicated tensor, all-gathered and compared in order.
#include "tessera/sharding/replica_check.hpp"

#include <xxhash.h>

#include <cstddef>
#include <cstdio>
#include <span>

#include "tessera/comm/host_collectives.hpp"
#include "tessera/core/setting_error.hpp"

namespace tessera {
namespace {

// XXH3-64 of each entry's values in `read`'s buffer (a unit's full flat buffer, `bytes_per_value`
// bytes each), appended to `out` as `name(entry) suffix`.
template <class Read>
void append_entry_checksums(const FlatLayout& layout, std::size_t bytes_per_value, const char* suffix, Read&& read,
                            std::vector<ReplicaChecksum>& out) {
  std::vector<std::byte> host(static_cast<std::size_t>(layout.numel()) * bytes_per_value);
  if (!host.empty()) read(layout.numel(), host.data());  // the unpadded buffer: entries only
  for (const FlatEntry& e : layout.entries()) {
    const std::byte* bytes = host.data() + static_cast<std::size_t>(e.offset) * bytes_per_value;
    out.push_back({e.name + suffix, XXH3_64bits(bytes, static_cast<std::size_t>(e.numel) * bytes_per_value)});
  }
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string differing_ranks_text(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return text;
}

}  // namespace

std::vector<ReplicaChecksum> replica_checksums(const ShardedEngine& engine) {
  std::vector<ReplicaChecksum> out;
  const Placement& placement = engine.placement();
  if (placement.stored_params != Extent::kFull) return out;  // stage 3: every rank stores its own shard
  if (!engine.device().holds_data()) return out;             // the meta device: nothing to read
  for (const auto& unit : engine.units()) {  // each in its own dtype (a unit kept in f32 is f32)
    append_entry_checksums(
        unit->layout(), dtype_size(unit->stored_params().dtype()), "",
        [&](std::int64_t count, void* host) { unit->stored_params().read(0, count, host); }, out);
  }
  // Stage 0 keeps a full f32 master beside parameters of another dtype.
  if (placement.optimizer_range != Extent::kFull) return out;
  for (const auto& unit : engine.units()) {
    if (unit->placement().master_is_params) continue;
    append_entry_checksums(
        unit->layout(), sizeof(float), " (f32 master)",
        [&](std::int64_t count, void* host) { unit->read_state(0, 0, count, host); }, out);
  }
  return out;
}

void check_replicas(const ShardedEngine& engine, Communicator& world, std::int64_t step) {
  const std::vector<ReplicaChecksum> mine = replica_checksums(engine);
  std::vector<std::uint64_t> sums;
  for (const ReplicaChecksum& c : mine) sums.push_back(c.checksum);
  const std::vector<std::uint64_t> counts = all_gather_values(world, static_cast<std::uint64_t>(sums.size()));
  const std::string where = "replica check after step " + std::to_string(step) + ": ";
  for (std::size_t r = 1; r < counts.size(); ++r) {
    if (counts[r] == counts[0]) continue;
    throw ReplicaDivergence("", {static_cast<int>(r)},
                            where + "rank " + std::to_string(r) + " holds " + std::to_string(counts[r]) +
                                " replicated tensors and rank 0 " + std::to_string(counts[0]) +
                                ": the ranks do not train the same model (build it alike on every rank)");
  }
  const std::vector<std::uint64_t> all = all_gather_values(world, std::span<const std::uint64_t>(sums));
  const std::size_t n = sums.size();
  for (std::size_t t = 0; t < n; ++t) {
    std::vector<int> differing;
    for (std::size_t r = 1; r < counts.size(); ++r) {
      if (all[r * n + t] != all[t]) differing.push_back(static_cast<int>(r));
    }
    if (differing.empty()) continue;
    const std::string& tensor = mine[t].tensor;
    throw ReplicaDivergence(
        tensor, differing,
        where + "'" + tensor + "' differs across ranks: " + differing_ranks_text(differing) + " hold" +
            (differing.size() == 1 ? "s" : "") + " other values than rank 0 (XXH3-64 " +
            hex(all[static_cast<std::size_t>(differing.front()) * n + t]) + " against " + hex(all[t]) + "). At ZeRO-" +
            std::to_string(zero_stage_number(engine.config().stage)) +
            " every rank keeps a replica of every parameter, and they must stay bit-identical. They drift apart when "
            "a module runs past its slot's hooks (its gradients are then not reduced across ranks), when ranks run "
            "with different settings, code or data shapes, or when a rank's memory is corrupted. The run stops "
            "here, before a checkpoint is saved from diverged replicas: resume from the last checkpoint once the "
            "cause is found");
  }
}

void check_replicas_every(const ShardedEngine& engine, Communicator& world, std::int64_t every, std::int64_t step) {
  if (every < 0) throw SettingError("run.check_replicas", std::to_string(every), "must be >= 0 (0: off)");
  if (every == 0) return;
  if (engine.placement().stored_params != Extent::kFull) {
    throw SettingError("run.check_replicas", std::to_string(every),
                       "applies at ZeRO stages 0-2, where every rank holds every parameter; at stage 3 each rank "
                       "holds only its shard, so there are no replicas to compare: set it to 0 (off)");
  }
  if (step % every == 0) check_replicas(engine, world, step);
}

}  // namespace tessera
