// Tests for default_corpus_files(): regular files only, symlinks resolved and de-duplicated,
// sorted, and an error naming the directory when it holds no files.
#include "tessera/text/data/default_corpus.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {
namespace {

namespace fs = std::filesystem;

class DefaultCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tessera_default_corpus_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = fs::canonical(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const std::string& name) const { std::ofstream((dir_ / name).string()) << name; }

  fs::path dir_;
};

TEST_F(DefaultCorpusTest, RegularFilesSortedWithLinksResolvedOnce) {
  touch("b-license");
  touch("a-license");
  fs::create_directory(dir_ / "subdir");
  fs::create_symlink(dir_ / "a-license", dir_ / "z-link");  // same file as a-license
  fs::create_symlink(dir_ / "missing", dir_ / "dangling");  // skipped
  const std::vector<std::string> files = default_corpus_files(dir_.string());
  const std::vector<std::string> expected = {(dir_ / "a-license").string(), (dir_ / "b-license").string()};
  EXPECT_EQ(files, expected);
}

TEST_F(DefaultCorpusTest, EmptyDirectoryIsAnError) {
  fs::create_directory(dir_ / "only-a-directory");
  try {
    default_corpus_files(dir_.string());
    FAIL() << "an empty directory gave a corpus";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir_.string() + ": no text files found"), std::string::npos) << e.what();
  }
  EXPECT_THROW(default_corpus_files((dir_ / "does-not-exist").string()), std::runtime_error);
}

TEST(DefaultCorpus, SystemLicenses) {
  if (!fs::is_directory(kDefaultCorpusDir)) GTEST_SKIP() << kDefaultCorpusDir << " is absent on this system";
  const std::vector<std::string> files = default_corpus_files();
  ASSERT_FALSE(files.empty());
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
  EXPECT_EQ(std::set<std::string>(files.begin(), files.end()).size(), files.size()) << "duplicates";
  for (const std::string& file : files) {
    EXPECT_FALSE(fs::is_symlink(file)) << file;
    EXPECT_TRUE(fs::is_regular_file(file)) << file;
  }
}

}  // namespace
}  // namespace tessera
