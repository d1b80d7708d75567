// SettingError text and its rewording under a program's flags.
#include "tessera/core/setting_error.hpp"

#include <algorithm>
#include <vector>

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
  // Other settings the problem mentions are spelled as this program's flags too (longest first).
  std::string problem = error.problem();
  std::vector<std::pair<std::string, std::string>> by_length(flags_.begin(), flags_.end());
  std::sort(by_length.begin(), by_length.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [setting, flag] : by_length) {
    for (std::size_t at = problem.find(setting); at != std::string::npos;
         at = problem.find(setting, at + flag.size())) {
      problem.replace(at, setting.size(), flag);
    }
  }
  return it->second + " " + error.value() + ": " + problem;
}

}  // namespace tessera
