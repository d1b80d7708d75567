// EnvLookup implementations and integer parsing of environment variables.
#include "launch/environment.hpp"

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

}  // namespace tessera
