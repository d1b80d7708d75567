// OffloadConfig: which model state leaves the device, and where it goes. The sharding engine
// places the state by it (Placement); the memory planner counts each tier.
//   optimizer   the f32 master weights and the optimizer's state (ZeRO-Offload)
//   parameters  the stored parameter shard (ZeRO-3 only; units are still gathered onto the device)
// kCpu keeps the state in pinned host memory (MemoryKind::kPinnedHost); kNvme in one file per
// rank under nvme.path, streamed block by block through the step (NvmeStore, ZeRO-Infinity).
#pragma once

#include <string>

#include "tessera/runtime/offload/nvme_settings.hpp"

namespace tessera {

enum class OffloadTarget { kNone, kCpu, kNvme };
const char* offload_target_name(OffloadTarget target);  // "none", "cpu", "nvme"
// "none", "cpu", "nvme"; anything else throws SettingError naming `setting`.
OffloadTarget parse_offload_target(const std::string& text, const std::string& setting);

struct OffloadConfig {
  OffloadTarget optimizer = OffloadTarget::kNone;
  OffloadTarget parameters = OffloadTarget::kNone;
  NvmeSettings nvme;  // where and how NVMe-offloaded state is kept

  bool any() const { return optimizer != OffloadTarget::kNone || parameters != OffloadTarget::kNone; }
  bool uses_nvme() const { return optimizer == OffloadTarget::kNvme || parameters == OffloadTarget::kNvme; }
  std::string to_string() const;  // "none", "optimizer:cpu", "optimizer:cpu,params:nvme"
};

}  // namespace tessera
