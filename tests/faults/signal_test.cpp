// Stop signals end to end: SIGTERM or SIGUSR1 to one rank of a 2-rank train_gpt job, SIGUSR1 to
// mpirun (which forwards it), and SIGTERM to mpirun started with the documented
// `--mca odls_base_sigkill_timeout` (docs/LAUNCH.md) each leave a committed checkpoint that a
// second run resumes from; without --checkpoint-dir the run stops and says nothing was saved.
// tessera-test-timeout: 400
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "tests/support/train_gpt_process.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::run_bounded;
using testing::ScratchDir;
using testing::tiny_run;
using testing::train_gpt_binary;

class StopSignals : public ::testing::Test {
 protected:
  void SetUp() override {
    train_gpt_ = train_gpt_binary();
    if (train_gpt_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    data_ = (dir_ / "tokens.bin").string();
    write_token_file(data_, random_tokens(20000, 40));
  }

  // Starts `mpirun <mpirun_flags> -np 2 train_gpt ...` in the background, waits for step 20, sends
  // `signal` to `target` ("mpirun" or "rank": the first rank process), and waits for the job.
  // Returns the job's log followed by "job exit N".
  std::string interrupted_job(const std::string& signal, const std::string& target, const std::string& extra,
                              const std::string& mpirun_flags = "") {
    const std::string log = (dir_ / "job.log").string();
    std::string flags = tiny_run(data_);
    flags.replace(flags.find("--log-every 1 "), 14, "--log-every 20 ");
    const std::string job = "mpirun --oversubscribe " + mpirun_flags + " -np 2 " + train_gpt_ + flags +
                            " --steps 1000000 " + extra;
    const std::string pid = target == "mpirun" ? "$M" : "$(pgrep -P $M -f train_gpt | head -1)";
    const std::string script = job + " > " + log + " 2>&1 & M=$!; "
                               "for i in $(seq 600); do grep -q \"step    20/\" " + log + " && break; kill -0 $M || break; "
                               "sleep 0.1; done; "
                               "kill -" + signal + " " + pid + "; wait $M; echo job exit $? >> " + log;
    const auto r = run_bounded("bash -c '" + script + "'", 150);
    std::string out = r.output;
    FILE* f = std::fopen(log.c_str(), "r");
    if (f != nullptr) {
      char buf[4096];
      std::size_t n = 0;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
      std::fclose(f);
    }
    return out;
  }

  // The step of the newest checkpoint in run_dir, or -1.
  static long long saved_step(const std::filesystem::path& run_dir) {
    long long newest = -1;
    if (!std::filesystem::exists(run_dir)) return newest;
    const std::regex name(R"(step_([0-9]+))");
    for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
      std::smatch m;
      const std::string file = entry.path().filename().string();
      if (std::regex_match(file, m, name)) newest = std::max(newest, std::stoll(m[1]));
    }
    return newest;
  }

  // Resumes run_dir for two more steps; expects it to start at the saved step.
  void expect_resumes(const std::filesystem::path& run_dir, long long step) {
    const auto r = run_bounded(train_gpt_ + tiny_run(data_) + " --checkpoint-dir " + run_dir.string() +
                               " --resume auto --steps " + std::to_string(step + 2));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("at step " + std::to_string(step)), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(std::to_string(step + 2) + "/" + std::to_string(step + 2) + " | loss"), std::string::npos)
        << r.output;
  }

  void expect_checkpoint_after(const std::string& signal, const std::string& target, const std::string& mpirun_flags,
                               const std::string& expected_exit) {
    const std::filesystem::path run_dir = dir_ / (signal + "_" + target);
    const std::string out = interrupted_job(signal, target, "--checkpoint-dir " + run_dir.string(), mpirun_flags);
    EXPECT_NE(out.find(expected_exit), std::string::npos) << signal << " to " << target << ":\n" << out;
    const long long step = saved_step(run_dir);
    ASSERT_GE(step, 20) << signal << " to " << target << " left no checkpoint:\n" << out;
    if (target == "rank") {
      EXPECT_NE(out.find("stop signal: saved step " + std::to_string(step)), std::string::npos) << out;
    }
    expect_resumes(run_dir, step);
  }

  ScratchDir dir_{"signals"};
  std::string train_gpt_, data_;
};

TEST_F(StopSignals, SigtermToOneRankSavesAndStopsEveryRank) {
  expect_checkpoint_after("TERM", "rank", "", "job exit 0");
}

TEST_F(StopSignals, Sigusr1ToOneRankSavesAndStopsEveryRank) {
  expect_checkpoint_after("USR1", "rank", "", "job exit 0");
}

TEST_F(StopSignals, Sigusr1ToMpirunIsForwardedAndSaves) {
  expect_checkpoint_after("USR1", "mpirun", "", "job exit 0");
}

TEST_F(StopSignals, SigtermToMpirunWithTheDocumentedDelaySaves) {
  // mpirun exits non-zero (it was terminated), but the ranks had the delay to save.
  expect_checkpoint_after("TERM", "mpirun", "--mca odls_base_sigkill_timeout 10", "job exit");
}

TEST_F(StopSignals, WithoutACheckpointDirectoryTheMessageSaysNothingWasSaved) {
  const std::string out = interrupted_job("USR1", "rank", "");
  EXPECT_NE(out.find("job exit 0"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing was saved (no --checkpoint-dir)"), std::string::npos) << out;
}

}  // namespace
}  // namespace tessera
