// make_rank_device: the GPU index from the local rank, then the factory.
#include "tessera/launch/rank_device.hpp"

#include <algorithm>

namespace tessera {

std::unique_ptr<Device> make_rank_device(DeviceChoice choice, const RankInfo& info, DeviceOptions options) {
  const DeviceChoice resolved = resolve_device_choice(choice);
  if (resolved == DeviceChoice::kCuda && options.index < 0) {
    options.index = std::max(0, info.device_index(device_count(DeviceChoice::kCuda)));
  }
  return make_device(resolved, options);
}

}  // namespace tessera
