// Durations read in at most two units, rounded down; time stamps are ISO 8601 local time with the
// offset written as +hh:mm.
#include "tessera/training/time_format.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <regex>

namespace tessera {
namespace {

TEST(TimeFormat, Durations) {
  EXPECT_EQ(format_duration(0.0), "0ms");
  EXPECT_EQ(format_duration(0.8509), "850ms");
  EXPECT_EQ(format_duration(1.0), "1s");
  EXPECT_EQ(format_duration(42.9), "42s");
  EXPECT_EQ(format_duration(245.0), "4m05s");
  EXPECT_EQ(format_duration(3600.0 * 2 + 7 * 60 + 59), "2h07m");
  EXPECT_EQ(format_duration(86400.0 * 3 + 4 * 3600 + 30), "3d04h");
  EXPECT_EQ(format_duration(-1.0), "?");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "?");
}

TEST(TimeFormat, Iso8601LocalTimeWithOffset) {
  const char* saved = std::getenv("TZ");
  const std::string before = saved ? saved : "";
  ::setenv("TZ", "UTC-2", 1);  // POSIX: two hours east of UTC
  ::tzset();
  const auto t = std::chrono::system_clock::from_time_t(1738321200);  // 2025-01-31T11:00:00Z
  const std::string east = iso8601_local(t);
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  const std::string utc = iso8601_local(t);
  if (saved) {
    ::setenv("TZ", before.c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
  EXPECT_EQ(east, "2025-01-31T13:00:00+02:00");
  EXPECT_EQ(utc, "2025-01-31T11:00:00+00:00");
  EXPECT_TRUE(std::regex_match(iso8601_local(std::chrono::system_clock::now()),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d)")));
}

}  // namespace
}  // namespace tessera
