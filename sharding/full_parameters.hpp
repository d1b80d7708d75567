// Full f32 parameter values of a sharded model, assembled from the master shards (collective over
// the engine's shard group: every rank of it must call). For tests, export and sampling.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tessera/sharding/sharded_engine.hpp"

namespace tessera {

// name -> (numel) f32 values of the full parameter, on every rank of the shard group.
std::map<std::string, std::vector<float>> gather_full_parameters(ShardedEngine& engine);

}  // namespace tessera
