// SettingError: a configuration value the library cannot run with. It names the setting in the
// library's own terms ("sharding.prefetch_units"), the value and what to change; a program that
// exposes the setting under a flag rewords it with SettingNames ("--prefetch -1: must be >= 0").
#pragma once

#include <map>
#include <stdexcept>
#include <string>

namespace tessera {

class SettingError : public std::invalid_argument {
 public:
  SettingError(std::string setting, std::string value, std::string problem);

  const std::string& setting() const { return setting_; }
  const std::string& value() const { return value_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string setting_, value_, problem_;
};

// A program's spelling of library settings: setting name -> flag ("sharding.prefetch_units" ->
// "--prefetch").
class SettingNames {
 public:
  SettingNames() = default;
  SettingNames(std::initializer_list<std::pair<const std::string, std::string>> flags) : flags_(flags) {}

  void add(const std::string& setting, const std::string& flag) { flags_[setting] = flag; }
  // The flag for `setting`, or the setting's own name when the program has no flag for it.
  std::string flag_of(const std::string& setting) const;
  // "--prefetch -1: must be >= 0" (the problem text with the program's spelling of the setting).
  std::string explain(const SettingError& error) const;

 private:
  std::map<std::string, std::string> flags_;
};

// Runs `body`; a SettingError escaping it is rethrown as std::invalid_argument worded with `names`
// (what a program wraps around the code that turns its flags into library settings and uses them).
template <class Body>
decltype(auto) reword_setting_errors(const SettingNames& names, Body&& body) {
  try {
    return body();
  } catch (const SettingError& e) {
    throw std::invalid_argument(names.explain(e));
  }
}

}  // namespace tessera
