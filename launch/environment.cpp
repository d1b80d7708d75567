// EnvLookup implementations and integer parsing of environment variables.
#include "tessera/launch/environment.hpp"

#include <unistd.h>  // environ

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <stdexcept>

namespace tessera {

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

EnvLookup environment_snapshot() {
  std::map<std::string, std::string> vars;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::size_t equals = text.find('=');
    if (equals != std::string::npos) vars.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return fixed_environment(std::move(vars));
}

EnvLookup fixed_environment(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::optional<int> env_int(const EnvLookup& env, const std::string& name) {
  const std::optional<std::string> text = env(name);
  if (!text || text->empty()) return std::nullopt;
  int value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, error] = std::from_chars(text->data(), end, value);
  if (error != std::errc() || ptr != end) {
    throw std::invalid_argument("environment variable " + name + "=\"" + *text +
                                "\" is not an integer; unset it or give a whole number");
  }
  return value;
}

std::optional<bool> env_switch(const EnvLookup& env, const std::string& name, const std::string& meaning) {
  const std::optional<std::string> text = env(name);
  if (!text || text->empty()) return std::nullopt;
  std::string value = *text;
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
  if (value == "1" || value == "true" || value == "yes" || value == "on") return true;
  if (value == "0" || value == "false" || value == "no" || value == "off") return false;
  throw std::invalid_argument("environment variable " + name + "=\"" + *text + "\" is not understood; set it to 1 (" +
                              meaning + ") or 0, or unset it");
}

}  // namespace tessera
