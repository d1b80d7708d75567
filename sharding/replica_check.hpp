// Replica check: every rank's copy of what is replicated across ranks compared by checksum, so
// replicas that drifted apart (a module run past its hooks, ranks given different settings or data,
// memory corrupted) stop the run at the first check instead of training on silently.
//
// What is compared: at ZeRO stages 0-2 every rank stores every parameter in full (Placement's
// stored_params), so each parameter's stored values (param dtype, its bytes in its unit's flat
// buffer); at stage 0 also the f32 master weights when they are a copy of their own (parameters
// stored in bf16). Each tensor's bytes are hashed with XXH3-64 on its rank (a copy to the host per
// unit), the checksums all-gathered over the world and compared in the order of the units and their
// parameters: the first tensor whose checksum differs on some rank from rank 0's is named with the
// ranks that differ. At stages 1-2 the master and optimizer state are sharded (nothing to compare);
// at stage 3 the parameters are too: the check does not apply there and asking for it is refused
// (SettingError "run.check_replicas"). Hybrid groups' replicated shards are not compared.
//
// Collective: every rank of `world` calls it at the same step with the same `every`, and every rank
// reaches the same verdict from the same gathered checksums, so all of them throw together (no rank
// is left waiting in a collective).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/comm/communicator.hpp"
#include "tessera/sharding/sharded_engine.hpp"

namespace tessera {

// One replicated tensor's checksum on this rank.
struct ReplicaChecksum {
  std::string tensor;  // full parameter name, "h.3.attn.qkv.weight"; "... (f32 master)" for a master
  std::uint64_t checksum = 0;
};

// This rank's checksums of every tensor replicated across the world's ranks, in unit then
// parameter order (stored parameters, then the masters); empty at stage 3.
std::vector<ReplicaChecksum> replica_checksums(const ShardedEngine& engine);

// The replicas differ. Thrown on every rank alike.
class ReplicaDivergence : public std::runtime_error {
 public:
  ReplicaDivergence(std::string tensor, std::vector<int> ranks, const std::string& message)
      : std::runtime_error(message), tensor_(std::move(tensor)), ranks_(std::move(ranks)) {}
  const std::string& tensor() const { return tensor_; }     // the first tensor that differs
  const std::vector<int>& ranks() const { return ranks_; }  // the ranks whose copy differs from rank 0's

 private:
  std::string tensor_;
  std::vector<int> ranks_;
};

// Collective over `world` (host memory, the engine's ranks): compares every rank's replica
// checksums after optimizer step `step` (the steps completed, named in the message) and throws
// ReplicaDivergence naming the first tensor that differs and the ranks that hold another copy than
// rank 0. At stage 3 it compares nothing.
void check_replicas(const ShardedEngine& engine, Communicator& world, std::int64_t step);

// The training loop's call after every step (`step` steps completed): check_replicas every `every`
// steps (0: never). Throws SettingError "run.check_replicas" on every call for `every` < 0, or > 0
// at stage 3.
void check_replicas_every(const ShardedEngine& engine, Communicator& world, std::int64_t every, std::int64_t step);

}  // namespace tessera
