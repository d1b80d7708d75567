// default_validation_file: llm.c's <name>_train.bin finds <name>_val.bin, a plain data.bin finds
// data_val.bin, llm.c's pair wins when both exist, and nothing is taken when neither does.
#include "flags/validation_file.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

void touch(const std::filesystem::path& path) { std::ofstream(path) << "x"; }

TEST(ValidationFile, LlmcPairIsFound) {
  testing::ScratchDir dir("validation_file");
  touch(dir / "tinyshakespeare_train.bin");
  touch(dir / "tinyshakespeare_val.bin");
  EXPECT_EQ(default_validation_file((dir / "tinyshakespeare_train.bin").string()),
            (dir / "tinyshakespeare_val.bin").string());
}

TEST(ValidationFile, StemValBesideAPlainFile) {
  testing::ScratchDir dir("validation_file");
  touch(dir / "data.bin");
  touch(dir / "data_val.bin");
  EXPECT_EQ(default_validation_file((dir / "data.bin").string()), (dir / "data_val.bin").string());
}

TEST(ValidationFile, LlmcPairWinsOverStemVal) {
  testing::ScratchDir dir("validation_file");
  touch(dir / "x_train.bin");
  touch(dir / "x_val.bin");
  touch(dir / "x_train_val.bin");
  EXPECT_EQ(default_validation_file((dir / "x_train.bin").string()), (dir / "x_val.bin").string());
  std::filesystem::remove(dir / "x_val.bin");
  EXPECT_EQ(default_validation_file((dir / "x_train.bin").string()), (dir / "x_train_val.bin").string());
}

TEST(ValidationFile, NothingWhenNeitherExists) {
  testing::ScratchDir dir("validation_file");
  touch(dir / "only_train.bin");
  EXPECT_FALSE(default_validation_file((dir / "only_train.bin").string()).has_value());
  touch(dir / "_train.bin");  // no name before _train: no llm.c pair to look for
  EXPECT_FALSE(default_validation_file((dir / "_train.bin").string()).has_value());
}

}  // namespace
}  // namespace tessera
