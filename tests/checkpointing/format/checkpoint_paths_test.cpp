// Run directory handling: names, listing committed checkpoints (never .tmp), resolving --resume
// (checkpoint dir, run dir via latest, newest when latest dangles), atomic latest updates, removal
// of crash remains, and --keep-last retention keeping exactly K (never the one latest points at).
#include "tessera/checkpointing/format/checkpoint_paths.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "tessera/checkpointing/save/checkpoint_retention.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

class RunDir : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tessera_paths_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path make_checkpoint(std::int64_t step, bool tmp = false) {
    const fs::path p = dir_ / (step_dir_name(step) + (tmp ? ".tmp" : ""));
    fs::create_directories(p);
    std::ofstream(p / kMetaFileName) << "x";
    return p;
  }
  std::vector<std::int64_t> steps() const {
    std::vector<std::int64_t> out;
    for (const auto& c : list_checkpoints(dir_)) out.push_back(c.step);
    return out;
  }

  fs::path dir_;
};

TEST_F(RunDir, NamesRoundTrip) {
  EXPECT_EQ(step_dir_name(500), "step_0000500");
  EXPECT_EQ(shard_file_name(3), "shard_00003.h5");
  EXPECT_EQ(parse_step_dir_name("step_0000500"), 500);
  EXPECT_EQ(parse_step_dir_name("step_0000500.tmp"), std::nullopt);
  EXPECT_EQ(parse_step_dir_name("latest"), std::nullopt);
  EXPECT_EQ(parse_step_dir_name("step_12345678"), 12345678);
}

TEST_F(RunDir, ListsCommittedOnlyAndResolvesLatest) {
  make_checkpoint(20);
  make_checkpoint(10);
  make_checkpoint(30, /*tmp=*/true);
  EXPECT_EQ(steps(), (std::vector<std::int64_t>{10, 20}));
  // No latest yet: the newest committed one.
  EXPECT_EQ(resolve_checkpoint(dir_)->filename(), "step_0000020");
  update_latest(dir_, step_dir_name(10));
  EXPECT_EQ(fs::read_symlink(dir_ / kLatestName), "step_0000010");
  EXPECT_EQ(resolve_checkpoint(dir_)->filename(), "step_0000010");
  EXPECT_EQ(resolve_checkpoint(dir_ / kLatestName)->filename(), "step_0000010");
  EXPECT_EQ(resolve_checkpoint(dir_ / step_dir_name(20))->filename(), "step_0000020");
  EXPECT_FALSE(fs::exists(dir_ / "latest.tmp"));
  // A dangling latest falls back to the newest committed checkpoint.
  fs::remove_all(dir_ / step_dir_name(10));
  EXPECT_EQ(resolve_checkpoint(dir_)->filename(), "step_0000020");
  // Nothing there at all.
  EXPECT_EQ(resolve_checkpoint(dir_ / "nothing"), std::nullopt);
}

TEST_F(RunDir, RemovesCrashRemains) {
  make_checkpoint(10);
  make_checkpoint(20, /*tmp=*/true);
  fs::create_directories(dir_ / "step_0000010.replaced.tmp");
  remove_stale_temporaries(dir_);
  EXPECT_FALSE(fs::exists(dir_ / "step_0000020.tmp"));
  EXPECT_FALSE(fs::exists(dir_ / "step_0000010.replaced.tmp"));
  EXPECT_TRUE(fs::exists(dir_ / step_dir_name(10)));
}

TEST_F(RunDir, RetentionKeepsExactlyK) {
  for (std::int64_t s = 1; s <= 6; ++s) make_checkpoint(s * 10);
  update_latest(dir_, step_dir_name(60));
  EXPECT_EQ(apply_retention(dir_, 0).size(), 0u) << "keep_last 0 keeps all";
  EXPECT_EQ(apply_retention(dir_, 3).size(), 3u);
  EXPECT_EQ(steps(), (std::vector<std::int64_t>{40, 50, 60}));
  EXPECT_EQ(apply_retention(dir_, 3).size(), 0u);
  // latest pointing at an older checkpoint (resumed from it) is never removed.
  update_latest(dir_, step_dir_name(40));
  apply_retention(dir_, 1);
  EXPECT_EQ(steps(), (std::vector<std::int64_t>{40, 60}));
}

}  // namespace
}  // namespace tessera
