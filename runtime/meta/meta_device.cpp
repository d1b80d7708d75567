// MetaDevice streams and registration.
#include "tessera/runtime/meta/meta_device.hpp"

#include <stdexcept>

#include "tessera/runtime/device_registry.hpp"

namespace tessera {

Stream& MetaDevice::stream(StreamRole role) {
  switch (role) {
    case StreamRole::kCompute: return compute_;
    case StreamRole::kCommunication: return communication_;
    case StreamRole::kCopy: return copy_;
  }
  throw std::invalid_argument("MetaDevice::stream: unknown stream role");
}

void MetaDevice::synchronize() {
  // Host functions run inline; only a failure among them is left to report.
  compute_.synchronize();
  communication_.synchronize();
  copy_.synchronize();
}

std::unique_ptr<Device> make_meta_device(AttentionScratchSize attention_scratch, bool memory_is_host) {
  return std::make_unique<MetaDevice>(std::move(attention_scratch), memory_is_host);
}

namespace detail {
const DeviceRegistration kMetaDeviceRegistration(DeviceBackend{
    DeviceChoice::kMeta, "meta", [] { return 1; }, [] { return std::string(); },
    [](const DeviceOptions&) { return make_meta_device(); }});
}  // namespace detail

}  // namespace tessera
