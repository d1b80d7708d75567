// Device memory exhausted mid-run, on the simulated GPU (TESSERA_SIM_GPU_MEMORY: its memory in bytes).
// A 2-rank run saves at steps 2 and 4 with micro-batches of 1; resumed with micro-batches of 8 (the
// same global batch) on a 20 MB device and --no-memory-check, its step 5 cannot fit: the job stops
// with a non-zero exit, its ranks named, the bytes the allocation asked for, what was in use and the
// planner's prediction of the step's peak; no checkpoint of a later step appears, and the one of step
// 4 still verifies. With the check on, the same run is refused before step 1 naming the device's memory.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::run_bounded;
using testing::ScratchDir;
using testing::train_gpt_binary;

TEST(DeviceOutOfMemory, MidRunStopsNamingTheBytesAndThePlannersPeakAndKeepsTheCheckpoint) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  ScratchDir dir("device_oom");
  const std::string data = (dir / "tokens.bin").string(), ckpt = (dir / "ckpt").string();
  write_token_file(data, random_tokens(40000, 60));
  const std::string flags = " --data " + data +
                            " --device sim-gpu --layers 2 --dim 128 --heads 2 --seq-len 128 --vocab 64"
                            " --sample-tokens 0 --eval-every 0 --log-every 1 --threads 1 --global-batch 16"
                            " --checkpoint-dir " +
                            ckpt;
  const testing::ProcessResult first = run_bounded(
      "mpirun --oversubscribe -np 2 " + train_gpt + flags + " --steps 4 --save-every 2 --micro-batch 1", 180);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string on_20mb =
      "env TESSERA_SIM_GPU_MEMORY=20000000 mpirun --oversubscribe -np 2 -x TESSERA_SIM_GPU_MEMORY ";
  const testing::ProcessResult full =
      run_bounded(on_20mb + train_gpt + flags + " --steps 8 --micro-batch 8 --resume auto --no-memory-check", 180);
  EXPECT_NE(full.exit_code, 0) << full.output;
  for (const char* part : {"resumed from", "out of memory allocating", "of device memory for", "already allocated",
                           "the memory planner predicted a peak of", "every one of the 2 ranks"}) {
    EXPECT_NE(full.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << full.output;
  }
  EXPECT_EQ(full.output.find("step     5/8"), std::string::npos) << "step 5 completed:\n" << full.output;
  const std::string bin_dir = std::filesystem::path(train_gpt).parent_path().string();
  const testing::ProcessResult listed = run_bounded("ls " + ckpt, 30);
  EXPECT_EQ(listed.output.find("step_0000005"), std::string::npos) << listed.output;
  const testing::ProcessResult verified = run_bounded(bin_dir + "/tessera_ckpt verify " + ckpt, 60);
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  EXPECT_NE(verified.output.find("step_0000004: step 4"), std::string::npos) << verified.output;

  const testing::ProcessResult checked =
      run_bounded(on_20mb + train_gpt + flags + " --steps 8 --micro-batch 8 --resume auto", 180);
  EXPECT_EQ(checked.exit_code, 3) << checked.output;
  EXPECT_NE(checked.output.find("(simulated GPU memory TESSERA_SIM_GPU_MEMORY=20000000)"), std::string::npos)
      << checked.output;
}

}  // namespace
}  // namespace tessera
