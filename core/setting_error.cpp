// SettingError text and its rewording under a program's flags.
#include "core/setting_error.hpp"

namespace tessera {

SettingError::SettingError(std::string setting, std::string value, std::string problem)
    : std::invalid_argument(setting + " = " + value + ": " + problem),
      setting_(std::move(setting)),
      value_(std::move(value)),
      problem_(std::move(problem)) {}

std::string SettingNames::flag_of(const std::string& setting) const {
  auto it = flags_.find(setting);
  return it == flags_.end() ? setting : it->second;
}

std::string SettingNames::explain(const SettingError& error) const {
  auto it = flags_.find(error.setting());
  if (it == flags_.end()) return error.what();
  return it->second + " " + error.value() + ": " + error.problem();
}

}  // namespace tessera
