// A node whose /dev/shm is too small for the shared-memory collectives (a container's 64 MiB, here
// 256 KiB: a tmpfs mounted over /dev/shm in a mount namespace of the test's own, gone with the
// job): a 2-rank ZeRO-2 job trains on, its communicators using messages as documented (LAUNCH.md),
// with the losses of the job that had the shared memory — no SIGBUS, no hang. Open MPI's own
// shared-memory transport is left out of both jobs (btl self,tcp), since it needs /dev/shm too.
// Skips where the test may not make a mount namespace.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::losses_of;
using testing::random_tokens;
using testing::run_bounded;
using testing::ScratchDir;
using testing::tiny_run;
using testing::train_gpt_binary;

TEST(SmallDevShm, TheCollectivesFallBackToMessagesWithTheSameLosses) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  if (run_bounded("unshare --mount --propagation private sh -c 'mount -t tmpfs -o size=256k tmpfs /dev/shm'", 30)
          .exit_code != 0) {
    GTEST_SKIP() << "cannot mount a small /dev/shm in a mount namespace here";
  }
  ScratchDir dir("small_shm");
  const std::string data = (dir / "tokens.bin").string();
  write_token_file(data, random_tokens(5000, 60));
  const auto job = [&](const std::string& name) {
    return "mpirun --oversubscribe -np 2 --mca btl self,tcp " + train_gpt + tiny_run(data) +
           " --steps 4 --zero 2 --global-batch 4 --micro-batch 2 --metrics " + (dir / (name + ".jsonl")).string();
  };
  const testing::ProcessResult normal = run_bounded(job("normal"), 120);
  ASSERT_EQ(normal.exit_code, 0) << normal.output;
  const testing::ProcessResult small =
      run_bounded("unshare --mount --propagation private sh -c 'mount -t tmpfs -o size=256k tmpfs /dev/shm && exec " +
                      job("small") + "'",
                  120);
  ASSERT_EQ(small.exit_code, 0) << "with a 256 KiB /dev/shm:\n" << small.output;
  const auto expected = losses_of(dir / "normal.jsonl");
  ASSERT_EQ(expected.size(), 4u) << normal.output;
  EXPECT_EQ(losses_of(dir / "small.jsonl"), expected) << small.output;
}

}  // namespace
}  // namespace tessera
