// The limits a container or a batch system sets, met by train_gpt before step 1: a run whose
// predicted peak exceeds
//  * a cgroup memory limit (a child cgroup this test makes under its own, 240 MiB, the run started
//    inside it) — where the machine lets the test make one; it skips, saying why, where it does not;
//  * a Slurm allocation (--mem 100M: SLURM_MEM_PER_NODE=100)
// is refused with exit status 3 naming the limit and where it came from, and trains nothing; and a
// TMPDIR (where MPI keeps its session directory) that is read-only or full (a small tmpfs mounted in
// a mount namespace of the test's own, gone with the run) stops a process started alone with one
// line naming TMPDIR and the error, instead of MPI's "orte_session_dir failed".
// The cgroup is removed afterwards (and stale ones of killed runs at the start).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/child_cgroup.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::run_bounded;
using testing::ScratchDir;
using testing::train_gpt_binary;

// The default model (predicted peak ~125 MB, ~265 MB with the margin) on a small token file.
std::string default_run(const std::string& train_gpt, const std::string& data) {
  return train_gpt + " --data " + data + " --vocab 64 --steps 1 --sample-tokens 0 --threads 1";
}

void expect_refused(const testing::ProcessResult& r, const std::string& limit_words) {
  EXPECT_EQ(r.exit_code, 3) << r.output;
  for (const std::string& part : {std::string("memory check: this run will not fit"), limit_words}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << r.output;
  }
  EXPECT_EQ(r.output.find("step     1"), std::string::npos) << "it trained anyway:\n" << r.output;
}

TEST(ContainerLimits, ASlurmAllocationTooSmallIsRefusedNamingIt) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  ScratchDir dir("slurm_mem");
  const std::string data = (dir / "tokens.bin").string();
  write_token_file(data, random_tokens(5000, 60));
  expect_refused(run_bounded("env SLURM_MEM_PER_NODE=100 " + default_run(train_gpt, data), 120),
                 "Slurm allocation --mem 100M per node (SLURM_MEM_PER_NODE)");
}

TEST(ContainerLimits, ACgroupLimitTooSmallIsRefusedNamingIt) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  const testing::ChildCgroup child("tessera_limits_", std::int64_t{240} << 20);
  if (!child.why_not().empty()) GTEST_SKIP() << child.why_not();
  ScratchDir dir("cgroup_mem");
  const std::string data = (dir / "tokens.bin").string();
  write_token_file(data, random_tokens(5000, 60));
  // The shell moves itself into the cgroup, then becomes train_gpt.
  const testing::ProcessResult r = run_bounded(
      "sh -c 'echo $$ > " + child.dir() + "/cgroup.procs && exec " + default_run(train_gpt, data) + "'", 120);
  expect_refused(r, "memory limit 240.00 MiB (" + child.limit_path() + ")");
}

// `train_gpt ...` with TMPDIR on a tmpfs mounted with `options` over `mount_point` in a mount
// namespace of its own, after `fill` (run inside, may be empty); skipped where that is not allowed.
testing::ProcessResult run_with_tmpdir(const std::string& mount_point, const std::string& options,
                                       const std::string& fill, const std::string& command) {
  const std::string inside = "mount -t tmpfs -o " + options + " tmpfs " + mount_point + " && " +
                             (fill.empty() ? "" : fill + "; ") + "TMPDIR=" + mount_point + " exec " + command;
  return run_bounded("unshare --mount --propagation private sh -c '" + inside + "'", 120);
}

TEST(ContainerLimits, AReadOnlyOrFullTmpdirIsNamedBeforeMpiStarts) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  ScratchDir dir("tmpdir_limits");
  const std::string point = (dir / "tmp").string();
  std::filesystem::create_directories(point);
  if (run_bounded("unshare --mount --propagation private sh -c 'mount -t tmpfs -o size=64k tmpfs " + point + "'", 30)
          .exit_code != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs in a mount namespace here";
  }
  const std::string data = (dir / "tokens.bin").string();
  write_token_file(data, random_tokens(5000, 60));
  const std::string run = default_run(train_gpt, data);
  const testing::ProcessResult read_only = run_with_tmpdir(point, "ro,size=64k", "", run);
  EXPECT_EQ(read_only.exit_code, 1) << read_only.output;
  EXPECT_NE(read_only.output.find("TMPDIR=" + point + ": cannot write a file there (Read-only file system)"),
            std::string::npos)
      << read_only.output;
  const testing::ProcessResult full =
      run_with_tmpdir(point, "size=64k", "dd if=/dev/zero of=" + point + "/fill bs=4k count=100 2>/dev/null", run);
  EXPECT_EQ(full.exit_code, 1) << full.output;
  EXPECT_NE(full.output.find("TMPDIR=" + point + ": cannot write a file there (No space left on device)"),
            std::string::npos)
      << full.output;
  for (const auto* r : {&read_only, &full}) {
    EXPECT_EQ(r->output.find("orte"), std::string::npos) << "MPI's own failure instead:\n" << r->output;
    EXPECT_EQ(r->output.find("step     1"), std::string::npos) << r->output;
  }
}

}  // namespace
}  // namespace tessera
