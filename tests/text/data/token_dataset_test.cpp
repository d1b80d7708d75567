// Tests for TokenDataset: glob expansion order, concatenation across files (including an empty
// one), reads that cross file boundaries, slices and the train/validation split.
#include "tessera/text/data/token_dataset.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {
namespace {

namespace fs = std::filesystem;

class TokenDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tessera_token_dataset_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A file of `count` tokens first, first + 1, ...
  std::string write(const std::string& name, int first, int count) const {
    std::vector<std::int32_t> tokens(count);
    for (int i = 0; i < count; ++i) tokens[i] = first + i;
    write_token_file(path(name), tokens);
    return path(name);
  }

  fs::path dir_;
};

TEST_F(TokenDatasetTest, GlobMatchesAreSortedBytewise) {
  write("shard_10.bin", 0, 1);
  write("shard_02.bin", 0, 1);
  write("shard_1.bin", 0, 1);
  write("Shard_00.bin", 0, 1);  // does not match the lowercase pattern
  write("other.bin", 0, 1);
  const std::vector<std::string> patterns = {path("other.bin"), path("shard_*.bin")};
  const std::vector<std::string> paths = expand_token_paths(patterns);
  const std::vector<std::string> expected = {path("other.bin"), path("shard_02.bin"), path("shard_1.bin"),
                                             path("shard_10.bin")};
  EXPECT_EQ(paths, expected);

  // Pattern order is kept: the plain path given last stays last.
  const std::vector<std::string> reversed = {path("shard_?.bin"), path("other.bin")};
  const std::vector<std::string> expected_reversed = {path("shard_1.bin"), path("other.bin")};
  EXPECT_EQ(expand_token_paths(reversed), expected_reversed);
}

TEST_F(TokenDatasetTest, PatternWithoutMatchesNamesThePattern) {
  const std::vector<std::string> patterns = {path("fineweb_train_*.bin")};
  try {
    expand_token_paths(patterns);
    FAIL() << "a pattern without matches was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path("fineweb_train_*.bin") + ": no token files match"), std::string::npos)
        << e.what();
  }
}

TEST_F(TokenDatasetTest, MissingPlainPathNamesTheFile) {
  try {
    TokenDataset dataset(path("absent.bin"));
    FAIL() << "a missing file was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path("absent.bin") + ": cannot open"), std::string::npos) << e.what();
  }
}

TEST_F(TokenDatasetTest, ConcatenatesFilesInGlobOrder) {
  write("part_0.bin", 0, 10);   // tokens 0..9
  write("part_1.bin", 100, 5);  // 100..104
  write("part_2.bin", 0, 0);    // empty
  write("part_3.bin", 200, 7);  // 200..206
  const TokenDataset dataset(path("part_*.bin"));
  std::vector<std::int32_t> expected;
  for (int i = 0; i < 10; ++i) expected.push_back(i);
  for (int i = 0; i < 5; ++i) expected.push_back(100 + i);
  for (int i = 0; i < 7; ++i) expected.push_back(200 + i);
  ASSERT_EQ(dataset.num_tokens(), 22);
  for (int i = 0; i < 22; ++i) EXPECT_EQ(dataset.token(i), expected[i]) << "token " << i;
  EXPECT_EQ(dataset.paths().size(), 4u);
  EXPECT_EQ(dataset.describe(), path("part_0.bin") + " ... " + path("part_3.bin") + " (4 files)");

  // Every read of every range, crossing file boundaries (and the empty file), matches.
  for (int first = 0; first <= 22; ++first) {
    for (int count = 0; first + count <= 22; ++count) {
      std::vector<std::int32_t> out(count, -1);
      dataset.read(first, count, out.data());
      for (int k = 0; k < count; ++k) {
        ASSERT_EQ(out[k], expected[first + k]) << "read(" << first << ", " << count << ") element " << k;
      }
    }
  }
  EXPECT_THROW(dataset.token(22), std::out_of_range);
  EXPECT_THROW(dataset.token(-1), std::out_of_range);
  std::vector<std::int32_t> out(3);
  EXPECT_THROW(dataset.read(20, 3, out.data()), std::out_of_range);
}

TEST_F(TokenDatasetTest, RawUint16Files) {
  write_token_file(path("a.raw"), std::vector<std::int32_t>{1, 2, 3}, TokenFileFormat::kRawUint16);
  write_token_file(path("b.raw"), std::vector<std::int32_t>{4, 5}, TokenFileFormat::kRawUint16);
  const TokenDataset dataset(std::vector<std::string>{path("*.raw")}, TokenFileFormat::kRawUint16);
  ASSERT_EQ(dataset.num_tokens(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(dataset.token(i), i + 1) << "token " << i;
}

TEST_F(TokenDatasetTest, SlicesViewTheSameTokens) {
  write("a.bin", 0, 30);
  write("b.bin", 30, 20);
  const TokenDataset dataset(std::vector<std::string>{path("a.bin"), path("b.bin")});
  const TokenDataset middle = dataset.slice(25, 10);  // crosses into b.bin
  ASSERT_EQ(middle.num_tokens(), 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(middle.token(i), 25 + i) << "token " << i;
  EXPECT_NE(middle.describe().find("tokens [25, 35)"), std::string::npos) << middle.describe();

  const TokenDataset inner = middle.slice(3, 4);
  ASSERT_EQ(inner.num_tokens(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(inner.token(i), 28 + i) << "token " << i;
  EXPECT_THROW(middle.slice(5, 6), std::out_of_range);
  EXPECT_THROW(middle.slice(-1, 2), std::out_of_range);
  EXPECT_EQ(dataset.slice(0, 50).describe(), dataset.describe()) << "the whole range is not marked as a slice";
}

TEST_F(TokenDatasetTest, SplitTrainValidationTakesTheTail) {
  write("c.bin", 0, 105);
  const TokenDataset dataset(path("c.bin"));
  const auto [train, val] = split_train_val(dataset, 0.1);
  ASSERT_EQ(train.num_tokens(), 95);
  ASSERT_EQ(val.num_tokens(), 10);  // floor(10.5)
  EXPECT_EQ(train.token(94), 94);
  EXPECT_EQ(val.token(0), 95);
  EXPECT_EQ(val.token(9), 104);
  const auto [all, none] = split_train_val(dataset, 0.0);
  EXPECT_EQ(all.num_tokens(), 105);
  EXPECT_EQ(none.num_tokens(), 0);
  EXPECT_THROW(split_train_val(dataset, 1.0), std::invalid_argument);
  EXPECT_THROW(split_train_val(dataset, -0.1), std::invalid_argument);
}

TEST(TokenDatasetEmpty, DefaultIsEmpty) {
  const TokenDataset dataset;
  EXPECT_EQ(dataset.num_tokens(), 0);
  EXPECT_EQ(dataset.describe(), "empty token dataset");
  dataset.read(0, 0, nullptr);
  EXPECT_THROW(dataset.token(0), std::out_of_range);
}

}  // namespace
}  // namespace tessera
