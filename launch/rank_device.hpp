// make_rank_device: the device of this rank — make_device (runtime/device_factory.hpp) with the GPU
// picked from the rank's place on its node (RankInfo::device_index: local rank modulo the GPUs it
// sees), so every rank of a node drives its own GPU without each program working that out.
//   auto device = make_rank_device(DeviceChoice::kAuto, dist.rank_info());
#pragma once

#include <memory>

#include "tessera/launch/rank_info.hpp"
#include "tessera/runtime/device_factory.hpp"

namespace tessera {

// As make_device(choice, options), with options.index, when it is -1 and the choice comes to CUDA,
// set to info.device_index(visible GPUs) (run_distributed puts the rank in front of any error).
std::unique_ptr<Device> make_rank_device(DeviceChoice choice, const RankInfo& info, DeviceOptions options = {});

}  // namespace tessera
