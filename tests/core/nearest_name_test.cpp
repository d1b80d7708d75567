// nearest_name: the did-you-mean of flags, config keys and subcommands — the one candidate a word
// abbreviates, else the nearest within max(2, |word| / 3) edits, none for a word far from all.
#include "tessera/core/nearest_name.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(NearestName, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("steps", "steps"), 0u);
  EXPECT_EQ(edit_distance("stpes", "steps"), 2u);  // a swap is two substitutions
  EXPECT_EQ(edit_distance("infoo", "info"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(NearestName, PicksTheNearestCandidateOrNone) {
  const std::vector<std::string> flags{"steps", "seed", "save-every", "seq-len"};
  EXPECT_EQ(nearest_name(flags, "stpes"), "steps");
  EXPECT_EQ(nearest_name(flags, "seq_len"), "seq-len");
  EXPECT_EQ(nearest_name(flags, "frobnicate"), "");
  EXPECT_EQ(nearest_name(flags, ""), "");
  EXPECT_EQ(nearest_name({"info", "verify", "export"}, "infoo"), "info");
  EXPECT_EQ(nearest_name({"info", "verify", "export"}, "verfy"), "verify");
}

TEST(NearestName, AnAbbreviationOfOneCandidateNamesIt) {
  // "lay" is 2 edits from "lr" and 3 from "layers", but the start of "layers" alone.
  const std::vector<std::string> flags{"layers", "lr", "seed", "seq-len"};
  EXPECT_EQ(nearest_name(flags, "lay"), "layers");
  EXPECT_EQ(nearest_name({"save-every", "save-dir"}, "save"), "") << "the start of two names and near neither";
  EXPECT_EQ(nearest_name(flags, "seq"), "seq-len");
  EXPECT_EQ(nearest_name(flags, "lr"), "lr") << "a whole name is not an abbreviation of a longer one";
}

}  // namespace
}  // namespace tessera
