// Duration and time-stamp formatting.
#include "tessera/training/time_format.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace tessera {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char text[32];
  if (seconds < 1.0) {
    std::snprintf(text, sizeof text, "%lldms", static_cast<long long>(seconds * 1000.0));
    return text;
  }
  const auto s = static_cast<long long>(seconds);
  if (s < 60) {
    std::snprintf(text, sizeof text, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  } else if (s < 86400) {
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  } else {
    std::snprintf(text, sizeof text, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
  }
  return text;
}

std::string iso8601_local(std::chrono::system_clock::time_point time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  localtime_r(&t, &tm);
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S%z", &tm);  // ...+0100
  const std::string stamp = text;                                // the offset as +hhmm; ISO 8601 writes +hh:mm
  const std::size_t n = stamp.size();
  if (n < 5 || (stamp[n - 5] != '+' && stamp[n - 5] != '-')) return stamp;
  return stamp.substr(0, n - 2) + ":" + stamp.substr(n - 2);
}

}  // namespace tessera
