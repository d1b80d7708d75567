// AddedTokens by hand: every occurrence found wherever it is, the leftmost and then the longest
// first, the normalized: false tokens in a pass before the normalized: true ones.
#include "tessera/text/tokenizer/added_tokens.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera {
namespace {

// The parts of `text`: ordinary text as itself, tokens as "#id".
std::vector<std::string> parts(const AddedTokens& tokens, const std::string& text) {
  std::vector<std::string> out;
  tokens.split(
      text, [&](std::string_view part) { out.emplace_back(part); },
      [&](std::int32_t id) { out.push_back('#' + std::to_string(id)); });
  return out;
}

using Parts = std::vector<std::string>;

TEST(AddedTokens, EveryOccurrenceWhateverSurroundsIt) {
  const AddedTokens tokens({{"<|endoftext|>", 7, true}});
  EXPECT_EQ(parts(tokens, "a<|endoftext|>b<|endoftext|><|endoftext|>"), (Parts{"a", "#7", "b", "#7", "#7"}));
  EXPECT_EQ(parts(tokens, "<|endoftext|>"), (Parts{"#7"}));
  EXPECT_EQ(parts(tokens, "<|endoftext|"), (Parts{"<|endoftext|"}));
  EXPECT_EQ(parts(tokens, ""), Parts{});
}

TEST(AddedTokens, LeftmostThenLongest) {
  const AddedTokens tokens({{"ab", 1, false}, {"abc", 2, false}, {"bcd", 3, false}});
  EXPECT_EQ(parts(tokens, "abcd"), (Parts{"#2", "d"}));  // abc starts first and is longer than ab
  EXPECT_EQ(parts(tokens, "xbcdab"), (Parts{"x", "#3", "#1"}));
}

TEST(AddedTokens, TokensThatAreNotNormalizedAreFoundFirst) {
  const AddedTokens tokens({{"abc", 1, true}, {"bc", 2, false}});
  EXPECT_EQ(parts(tokens, "abc"), (Parts{"a", "#2"}));  // bc in the first pass; "a" left has no abc
  EXPECT_EQ(parts(tokens, "xabcx abc"), (Parts{"xa", "#2", "x a", "#2"}));
  const AddedTokens normalized_only({{"abc", 1, true}});
  EXPECT_EQ(parts(normalized_only, "xabcx"), (Parts{"x", "#1", "x"}));
}

}  // namespace
}  // namespace tessera
