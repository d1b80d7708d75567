// Settings agreed across ranks. Ranks launched with different settings (an MPMD launch, a config
// file per rank, a typo in one host's environment) would otherwise train a silently mixed model:
// shape-changing differences fail on their own, but a different seed, learning rate or weight
// decay does not. At the start of a run every rank digests its whole list of settings; when the
// digests differ, the ranks exchange their values and every rank throws the same error naming the
// settings that differ and each rank's value:
//
//   settings differ across ranks (every rank must run with the same): --lr: rank 0, 2: 0.001;
//   rank 1: 0.002 | --seed: rank 0, 1: 1337; rank 2: 7
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tessera/comm/communicator.hpp"
#include "tessera/core/setting_error.hpp"

namespace tessera {

using SettingList = std::vector<std::pair<std::string, std::string>>;  // (name, value), in a fixed order

// Collective over `world` (a host communicator). Returns when every rank passed the same list;
// otherwise throws std::invalid_argument on every rank (names spelled through `names`; at most
// the first 8 differing settings listed, values quoted up to 40 characters).
void check_settings_agree(Communicator& world, const SettingList& settings, const SettingNames& names = {});

}  // namespace tessera
