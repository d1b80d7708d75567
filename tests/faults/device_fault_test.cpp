// Faults on the device, planted in the simulated GPU (TESSERA_SIM_GPU_FAULT) during step 4 of a
// 2-rank train_gpt run that saves every 2 steps: device memory exhausted (every rank), a failed
// asynchronous copy (rank 1 only: the other rank is stopped by the job's failure path) and a kernel
// whose failure is reported at a later synchronization (rank 0 only, asynchronous saves: the failed
// optimizer kernel is reported by the synchronization that opens the step's save). Each job stops
// within seconds with a non-zero exit and a message naming the rank, the op (the bytes and the
// planner's peak for the allocation) and what to do; no checkpoint of step 4 or later exists,
// `latest` still points at step 2, which verifies, and `--resume auto` without the fault runs on to
// the last step.
// tessera-test-timeout: 400
// tessera-test-cost: 40
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::mpirun_expecting_failure;
using testing::ProcessResult;
using testing::random_tokens;
using testing::run_bounded;
using testing::ScratchDir;
using testing::train_gpt_binary;

constexpr int kDeviceFaultStep = 4;
constexpr int kDeviceFaultSteps = 6;
// A failing job ends this soon: the failure path waits 2 s for the other ranks, then aborts the job.
constexpr double kDeviceFaultStopSeconds = 45.0;

// A tiny GPT on the simulated GPU, saving every 2 of 6 steps into `ckpt`.
std::string device_fault_flags(const std::string& data, const std::string& ckpt) {
  return testing::tiny_run(data) + " --device sim-gpu --global-batch 4 --micro-batch 2 --steps " +
         std::to_string(kDeviceFaultSteps) + " --save-every 2 --checkpoint-dir " + ckpt;
}

// The 2-rank job with TESSERA_SIM_GPU_FAULT=`fault` on rank `rank` (-1: on both); its wall time in
// `seconds`.
ProcessResult run_with_device_fault(const std::string& flags, const std::string& fault, int rank, double& seconds) {
  const std::string train_gpt = train_gpt_binary();
  const std::string planted = "env TESSERA_SIM_GPU_FAULT=" + fault + " ";
  const std::string command =
      rank < 0 ? planted + mpirun_expecting_failure(2) + "-x TESSERA_SIM_GPU_FAULT " + train_gpt + flags
               : mpirun_expecting_failure(1) + (rank == 0 ? planted : "") + train_gpt + flags + " : -np 1 " +
                     (rank == 1 ? planted : "") + train_gpt + flags;
  const auto t0 = std::chrono::steady_clock::now();
  ProcessResult result = run_bounded(command, 180);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

void expect_device_fault_parts(const ProcessResult& run, const std::vector<std::string>& parts) {
  for (const std::string& part : parts)
    EXPECT_NE(run.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << run.output;
}

// Nothing of step kDeviceFaultStep or later was committed; `latest` is step 2's, which verifies; a resume
// without the fault runs to the end and saves the last step.
void expect_last_checkpoint_whole_and_resumable(const std::string& flags, const fs::path& ckpt) {
  const std::string bin_dir = fs::path(train_gpt_binary()).parent_path().string();
  for (int step = kDeviceFaultStep; step <= kDeviceFaultSteps; ++step) {
    EXPECT_FALSE(fs::exists(ckpt / ("step_000000" + std::to_string(step)))) << "a checkpoint of step " << step;
  }
  std::error_code ec;
  EXPECT_EQ(fs::read_symlink(ckpt / "latest", ec), fs::path("step_0000002")) << ec.message();
  const ProcessResult verified = run_bounded(bin_dir + "/tessera_ckpt verify " + ckpt.string(), 60);
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  EXPECT_NE(verified.output.find("step_0000002: step 2"), std::string::npos) << verified.output;

  const ProcessResult resumed =
      run_bounded("mpirun --oversubscribe -np 2 " + train_gpt_binary() + flags + " --resume auto", 180);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  expect_device_fault_parts(resumed, {"resumed from", "at step 2", "step     6/6"});
  EXPECT_TRUE(fs::exists(ckpt / "step_0000006")) << resumed.output;
}

class DeviceFault : public ::testing::Test {
 protected:
  void SetUp() override {
    if (train_gpt_binary().empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    data_ = (dir_ / "tokens.bin").string();
    write_token_file(data_, random_tokens(20000, 40));
    flags_ = device_fault_flags(data_, ckpt_.string());
  }

  ScratchDir dir_{"device_fault"};
  fs::path ckpt_ = dir_ / "ckpt";
  std::string data_, flags_;
};

TEST_F(DeviceFault, OutOfMemoryInAStepStopsNamingTheBytesAndThePlannersPeak) {
  double seconds = 0.0;
  const ProcessResult run = run_with_device_fault(flags_, "oom@step4", -1, seconds);
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_LT(seconds, kDeviceFaultStopSeconds) << run.output;
  expect_device_fault_parts(
      run, {"step     3/6", "out of memory allocating", "bytes) of device memory for", "already allocated",
            "the memory planner predicted a peak of", "every one of the 2 ranks"});
  EXPECT_EQ(run.output.find("step     4/6"), std::string::npos) << "step 4 completed:\n" << run.output;
  expect_last_checkpoint_whole_and_resumable(flags_, ckpt_);
}

TEST_F(DeviceFault, FailedCopyOnOneRankStopsTheJobNamingTheRankAndTheOp) {
  double seconds = 0.0;
  const ProcessResult run = run_with_device_fault(flags_, "copy:copy_to_host_async@step4", 1, seconds);
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_LT(seconds, kDeviceFaultStopSeconds) << run.output;
  expect_device_fault_parts(run,
                            {"rank 1/2", "copy_to_host_async failed: the copy of 8 bytes from device to host memory",
                             "(fault planted by TESSERA_SIM_GPU_FAULT=copy:copy_to_host_async@step4)", "; in step 4;",
                             "continue from the last checkpoint in " + ckpt_.string() + " with --resume auto"});
  EXPECT_EQ(run.output.find("step     4/6"), std::string::npos) << "step 4 completed:\n" << run.output;
  expect_last_checkpoint_whole_and_resumable(flags_, ckpt_);
}

TEST_F(DeviceFault, KernelErrorReportedAtTheSaveStopsBeforeTheStepIsSaved) {
  const std::string flags = flags_ + " --async-checkpoint";
  double seconds = 0.0;
  const ProcessResult run = run_with_device_fault(flags, "kernel:adamw_update@step4", 0, seconds);
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_LT(seconds, kDeviceFaultStopSeconds) << run.output;
  expect_device_fault_parts(run,
                            {"rank 0/2", "kernel adamw_update failed on the compute stream",
                             "(fault planted by TESSERA_SIM_GPU_FAULT=kernel:adamw_update@step4)",
                             "reported at the stream's next synchronization", "; in step 4;", "with --resume auto"});
  EXPECT_EQ(run.output.find("step     4/6"), std::string::npos) << "step 4 completed:\n" << run.output;
  expect_last_checkpoint_whole_and_resumable(flags, ckpt_);
}

}  // namespace
}  // namespace tessera
