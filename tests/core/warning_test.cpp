// Warnings carry their rank ("rank 3: warning: ..."); the launcher's rank stands in where the caller
// knows none; a ScopedRankLineSink takes the lines while it lives and gives them back to the
// previous sink (or stderr) after.
#include "tessera/core/warning.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace tessera {
namespace {

TEST(Warning, CarriesTheRank) {
  EXPECT_EQ(warning_line(3, "memory grew"), "rank 3: warning: memory grew");
  EXPECT_EQ(warning_line(0, ""), "rank 0: warning: ");
}

TEST(Warning, LauncherRankStandsInForAnUnknownRank) {
  const char* saved = std::getenv("OMPI_COMM_WORLD_RANK");
  const std::string before = saved ? saved : "";
  ::setenv("OMPI_COMM_WORLD_RANK", "5", 1);
  EXPECT_EQ(warning_line(kLauncherRank, "x"), "rank 5: warning: x");
  ::setenv("OMPI_COMM_WORLD_RANK", "not a number", 1);
  const std::string fallback = warning_line(kLauncherRank, "x");
  if (saved) {
    ::setenv("OMPI_COMM_WORLD_RANK", before.c_str(), 1);
  } else {
    ::unsetenv("OMPI_COMM_WORLD_RANK");
  }
  // Without a readable OMPI rank the next launcher's variable, or 0, is used: never "not a number".
  EXPECT_EQ(fallback.find("not a number"), std::string::npos) << fallback;
  EXPECT_EQ(fallback.rfind("rank ", 0), 0u) << fallback;
}

TEST(Warning, SinksNestAndRestore) {
  std::vector<std::string> outer, inner;
  {
    ScopedRankLineSink a([&](const std::string& line) { outer.push_back(line); });
    warn(1, "first");
    {
      ScopedRankLineSink b([&](const std::string& line) { inner.push_back(line); });
      warn(2, "second");
      print_rank_notice(4, "offload: replaced a stale file");
    }
    warn(1, "third");
  }
  EXPECT_EQ(outer, (std::vector<std::string>{"rank 1: warning: first", "rank 1: warning: third"}));
  EXPECT_EQ(inner, (std::vector<std::string>{"rank 2: warning: second", "rank 4: offload: replaced a stale file"}));
}

TEST(Warning, GoesToStderrWithoutASink) {
  ::testing::internal::CaptureStderr();
  warn(7, "to stderr");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "rank 7: warning: to stderr\n");
}

}  // namespace
}  // namespace tessera
