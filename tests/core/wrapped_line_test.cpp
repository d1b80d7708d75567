// wrapped_line: a labelled list on one line while it fits, else continued on lines indented past
// the label, broken between parts only, every line within the width; a part too wide stays whole.
#include "tessera/core/wrapped_line.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace tessera {
namespace {

TEST(WrappedLine, OneLineWhileItFits) {
  EXPECT_EQ(wrapped_line("batch:", {"global batch 8", "256 tokens per step"}), "batch: global batch 8, 256 tokens per step\n");
  EXPECT_EQ(wrapped_line("batch:", {"abc", "de"}, 14), "batch: abc, de\n") << "14 characters: fits exactly";
}

TEST(WrappedLine, ContinuesPastTheLabelBetweenParts) {
  EXPECT_EQ(wrapped_line("batch:", {"abc", "de"}, 13), "batch: abc,\n       de\n");
  EXPECT_EQ(wrapped_line("x:", {"aaaa", "bbbb", "cccc", "dddd"}, 14), "x: aaaa, bbbb,\n   cccc, dddd\n");
}

TEST(WrappedLine, EveryLineWithinTheWidthAndAWidePartWhole) {
  const std::string wide(120, 'p');
  const std::string text = wrapped_line("data:", {"first part", wide, "after it", "and more"}, 40);
  EXPECT_EQ(text, "data: first part,\n      " + wide + ",\n      after it, and more\n");
  std::istringstream lines(wrapped_line("memory check:", {std::string(50, 'a'), std::string(40, 'b'),
                                                          std::string(45, 'c'), std::string(30, 'd')}));
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) EXPECT_LE(line.size(), kConsoleLineWidth) << line;
  EXPECT_EQ(count, 3);
}

TEST(WrappedLine, AnotherSeparator) {
  EXPECT_EQ(wrapped_line("sharding:", {"ZeRO-3", "activation checkpointing: none"}, 100, ';'),
            "sharding: ZeRO-3; activation checkpointing: none\n");
}

}  // namespace
}  // namespace tessera
