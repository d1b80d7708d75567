// Offload target names and the description of an OffloadConfig.
#include "tessera/sharding/offload_config.hpp"

#include "tessera/core/setting_error.hpp"

namespace tessera {

const char* offload_target_name(OffloadTarget target) {
  switch (target) {
    case OffloadTarget::kNone: return "none";
    case OffloadTarget::kCpu: return "cpu";
    case OffloadTarget::kNvme: return "nvme";
  }
  return "?";
}

OffloadTarget parse_offload_target(const std::string& text, const std::string& setting) {
  if (text == "none") return OffloadTarget::kNone;
  if (text == "cpu") return OffloadTarget::kCpu;
  if (text == "nvme") return OffloadTarget::kNvme;
  throw SettingError(setting, text, "use none, cpu or nvme");
}

std::string OffloadConfig::to_string() const {
  if (!any()) return "none";
  std::string s;
  if (optimizer != OffloadTarget::kNone) s.append("optimizer:").append(offload_target_name(optimizer));
  if (parameters != OffloadTarget::kNone) {
    if (!s.empty()) s += ",";
    s.append("params:").append(offload_target_name(parameters));
  }
  return s;
}

}  // namespace tessera
