// comm_options_from_env: TESSERA_DEBUG_COLLECTIVES and TESSERA_COLLECTIVE_TIMEOUT.
#include "tessera/launch/comm_env.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace tessera {
namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

CommOptions comm_options_from_env(const EnvLookup& env, CommOptions defaults) {
  CommOptions options = std::move(defaults);
  if (const auto debug = env("TESSERA_DEBUG_COLLECTIVES"); debug && !debug->empty()) {
    const std::string value = lowercase(*debug);
    if (value == "1" || value == "true" || value == "on" || value == "yes") {
      options.check = CollectiveCheck::kMatchCalls;
    } else if (value == "0" || value == "false" || value == "off" || value == "no") {
      options.check = CollectiveCheck::kOff;
    } else {
      throw std::invalid_argument("TESSERA_DEBUG_COLLECTIVES=\"" + *debug +
                                  "\" is not understood; set it to 1 (check collective calls) or 0");
    }
  }
  if (const auto timeout = env("TESSERA_COLLECTIVE_TIMEOUT"); timeout && !timeout->empty()) {
    double seconds = -1.0;
    const char* end = timeout->data() + timeout->size();
    const auto [ptr, error] = std::from_chars(timeout->data(), end, seconds);
    if (error != std::errc() || ptr != end || !(seconds >= 0.0) || seconds > 1e7) {
      throw std::invalid_argument("TESSERA_COLLECTIVE_TIMEOUT=\"" + *timeout +
                                  "\" is not a number of seconds; give e.g. 600 (0 turns the "
                                  "collective watchdog off)");
    }
    auto milliseconds = static_cast<long long>(seconds * 1000.0 + 0.5);
    if (seconds > 0.0 && milliseconds == 0) milliseconds = 1;  // a tiny timeout, not "off"
    options.watchdog_timeout = std::chrono::milliseconds(milliseconds);
  }
  return options;
}

}  // namespace tessera
