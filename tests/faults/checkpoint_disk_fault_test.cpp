// Checkpoints and full or unusable disks, through train_gpt and tessera_ckpt on small tmpfs mounts
// (skipped, with the reason, where mounting is not permitted):
//  * a save (synchronous or in the background) onto a file system that fills up fails with "No
//    space left on device", the file and the bytes it needed — no HDF5 error stack, no crash at
//    exit — and leaves the previous checkpoint and `latest` whole and the failed save's files removed;
//  * `tessera_ckpt export` onto a full file system fails the same way and leaves no temporary file;
//  * before training, a read-only checkpoint directory and one with less free space than a
//    checkpoint needs are refused, naming the directory (and the bytes needed and free).
// The runs of one test that share nothing (each save mode, each refused directory) run at once; each
// is checked as before.
#include <gtest/gtest.h>

#include <memory>

#include "checkpoint_fault_support.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

constexpr int kDiskLimit = 120;  // seconds per child process

// What a clean failure never prints: HDF5's own error stack, a crash.
void expect_no_crash(const ChildResult& r, const std::string& what) {
  EXPECT_FALSE(r.timed_out) << what << ":\n" << r.output;
  EXPECT_LT(r.exit_code, 128) << what << ": killed by a signal:\n" << r.output;
  EXPECT_FALSE(contains(r.output, "HDF5-DIAG")) << what << ":\n" << r.output;
  EXPECT_FALSE(contains(r.output, "Segmentation")) << what << ":\n" << r.output;
}

TEST(CheckpointDiskFull, SaveOntoAFullFileSystemNamesTheCauseAndKeepsTheLastCheckpoint) {
  const std::vector<std::string> modes = {std::string(), std::string(" --async-checkpoint")};
  // One scratch directory per mode, each with its small tmpfs.
  std::vector<std::unique_ptr<ScratchDir>> scratches;
  std::vector<std::string> commands;
  for (const std::string& mode : modes) {
    scratches.push_back(std::make_unique<ScratchDir>("ckpt_disk_full"));
    ScratchDir& scratch = *scratches.back();
    // One checkpoint of the tiny GPT takes about 430 KB: the first fits, the second does not.
    const std::string reason = scratch.mount_tmpfs("small", 600 * 1024);
    if (!reason.empty()) GTEST_SKIP() << reason;
    const std::string data = write_tokens(scratch.path());
    commands.push_back(tiny_train_gpt(data, 3) + " --checkpoint-dir " + (scratch / "small/run").string() +
                       " --save-every 1" + mode);
  }
  const std::vector<ChildResult> results = run_child_jobs(commands, kDiskLimit);
  for (std::size_t i = 0; i < modes.size(); ++i) {
    const std::string& mode = modes[i];
    const ChildResult& r = results[i];
    const std::string what = "save onto a full tmpfs" + mode;
    const fs::path run = *scratches[i] / "small/run";
    EXPECT_EQ(r.exit_code, 1) << what << ":\n" << r.output;
    expect_no_crash(r, what);
    for (const std::string& part :
         {"No space left on device: writing " + (run / "step_0000002.tmp/shard_00000.h5").string(),
          std::string("needs about "), std::string("free on its file system")}) {
      EXPECT_TRUE(contains(r.output, part)) << what << ": no \"" << part << "\" in:\n" << r.output;
    }
    // A step is logged before its state is saved; a synchronous save stops the run at once, a
    // background one is reported by the next save.
    const std::vector<int> steps = logged_steps(r.output);
    EXPECT_EQ(steps, (mode.empty() ? std::vector<int>{1, 2} : std::vector<int>{1, 2, 3})) << what << ":\n" << r.output;
    // The previous checkpoint is whole and `latest` still names it; the failed save left nothing.
    EXPECT_EQ(fs::read_symlink(run / kLatestName), step_dir_name(1)) << what;
    EXPECT_FALSE(fs::exists(run / "step_0000002.tmp")) << what;
    EXPECT_FALSE(fs::exists(run / "step_0000003.tmp")) << what;
    const ChildResult verify = run_child_job(tessera_ckpt_bin() + " verify " + run.string(), kDiskLimit);
    EXPECT_EQ(verify.exit_code, 0) << what << ":\n" << verify.output;
    EXPECT_TRUE(contains(verify.output, "step 1")) << what << ":\n" << verify.output;
  }
}

TEST(CheckpointDiskFull, ExportOntoAFullFileSystemLeavesNothingBehind) {
  ScratchDir scratch("ckpt_export_full");
  const std::string reason = scratch.mount_tmpfs("small", 64 * 1024);
  if (!reason.empty()) GTEST_SKIP() << reason;
  const std::string data = write_tokens(scratch.path());
  const fs::path run = scratch / "run";
  const ChildResult trained =
      run_child_job(tiny_train_gpt(data, 2) + " --checkpoint-dir " + run.string() + " --save-every 2", kDiskLimit);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const fs::path out = scratch / "small/weights.h5";
  const ChildResult r = run_child_job(tessera_ckpt_bin() + " export " + run.string() + " " + out.string(), kDiskLimit);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_no_crash(r, "export onto a full tmpfs");
  EXPECT_TRUE(contains(r.output, "No space left on device: writing " + out.string() + ".tmp needs about ")) << r.output;
  EXPECT_FALSE(fs::exists(out.string() + ".tmp")) << "the failed export's temporary file was left";
  EXPECT_FALSE(fs::exists(out));
  // With room, the same export works.
  const ChildResult ok = run_child_job(
      tessera_ckpt_bin() + " export " + run.string() + " " + (scratch / "weights.h5").string(), kDiskLimit);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST(CheckpointStartupChecks, ReadOnlyAndTooSmallDirectoriesAreRefusedBeforeTraining) {
  ScratchDir scratch("ckpt_startup");
  const std::string read_only = scratch.mount_tmpfs("read_only", 1 << 20, /*read_only=*/true);
  if (!read_only.empty()) GTEST_SKIP() << read_only;
  const std::string small = scratch.mount_tmpfs("small", 100 * 1024);
  if (!small.empty()) GTEST_SKIP() << small;
  const std::string data = write_tokens(scratch.path());
  struct Case {
    fs::path dir;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {scratch / "read_only",
       {"the checkpoint directory " + (scratch / "read_only").string() + " is not writable", "Read-only file system"}},
      {scratch / "small",
       {"the checkpoint directory " + (scratch / "small").string() + " has ",
        "free, but one checkpoint needs 336384 bytes"}},
  };
  std::vector<std::string> commands;
  for (const Case& c : cases) {
    commands.push_back(tiny_train_gpt(data, 2) + " --checkpoint-dir " + c.dir.string() + " --save-every 1");
  }
  const std::vector<ChildResult> results = run_child_jobs(commands, kDiskLimit);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const ChildResult& r = results[i];
    EXPECT_EQ(r.exit_code, 1) << c.dir << ":\n" << r.output;
    expect_no_crash(r, c.dir.string());
    for (const std::string& part : c.parts)
      EXPECT_TRUE(contains(r.output, part)) << "no \"" << part << "\" in:\n" << r.output;
    EXPECT_TRUE(logged_steps(r.output).empty()) << "trained anyway:\n" << r.output;
  }
}

}  // namespace
}  // namespace tessera::testing
