// comm_options_from_env: TESSERA_DEBUG_COLLECTIVES and TESSERA_COLLECTIVE_TIMEOUT, their defaults,
// and messages for values that cannot be parsed.
#include "tessera/launch/comm_env.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tessera {
namespace {

using namespace std::chrono_literals;

TEST(CommEnv, DefaultsWhenUnset) {
  const CommOptions options = comm_options_from_env(fixed_environment({}));
  EXPECT_EQ(options.check, CollectiveCheck::kOff);
  EXPECT_EQ(options.watchdog_timeout, std::chrono::milliseconds(10min));
  EXPECT_EQ(options.name, "world");
}

TEST(CommEnv, DebugCollectives) {
  for (const char* on : {"1", "true", "ON", "yes"}) {
    EXPECT_EQ(comm_options_from_env(fixed_environment({{"TESSERA_DEBUG_COLLECTIVES", on}})).check,
              CollectiveCheck::kMatchCalls)
        << on;
  }
  for (const char* off : {"0", "false", "off", "No"}) {
    CommOptions defaults;
    defaults.check = CollectiveCheck::kMatchCalls;
    EXPECT_EQ(comm_options_from_env(fixed_environment({{"TESSERA_DEBUG_COLLECTIVES", off}}), defaults).check,
              CollectiveCheck::kOff)
        << off;
  }
  EXPECT_THROW(comm_options_from_env(fixed_environment({{"TESSERA_DEBUG_COLLECTIVES", "maybe"}})),
               std::invalid_argument);
}

TEST(CommEnv, CollectiveTimeout) {
  EXPECT_EQ(comm_options_from_env(fixed_environment({{"TESSERA_COLLECTIVE_TIMEOUT", "90"}})).watchdog_timeout, 90s);
  EXPECT_EQ(comm_options_from_env(fixed_environment({{"TESSERA_COLLECTIVE_TIMEOUT", "2.5"}})).watchdog_timeout, 2500ms);
  EXPECT_EQ(comm_options_from_env(fixed_environment({{"TESSERA_COLLECTIVE_TIMEOUT", "0"}})).watchdog_timeout, 0ms);
  for (const char* bad : {"-1", "10min", "abc"}) {
    try {
      comm_options_from_env(fixed_environment({{"TESSERA_COLLECTIVE_TIMEOUT", bad}}));
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("TESSERA_COLLECTIVE_TIMEOUT"), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace tessera
