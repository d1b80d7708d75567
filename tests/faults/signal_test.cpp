// Stop signals end to end: SIGTERM or SIGUSR1 to one rank of a 2-rank train_gpt job, SIGUSR1 to
// mpirun (which forwards it), and SIGTERM to mpirun started with the documented
// `--mca odls_base_sigkill_timeout` (docs/LAUNCH.md) each leave a committed checkpoint that a
// second run resumes from; without --checkpoint-dir the run stops and says nothing was saved, also
// when the signal reaches a non-zero rank. A signal during the last step, or during the last
// validation (after the last step's own check), saves the last step and stops before the summary
// and the sample, so a requeued job resumes at the end.
// The signalled jobs share nothing (each has its own run directory and log) and mostly wait (for
// mpirun, for the line that says when to signal, for a save), so the suite starts all of them at
// once; each test checks its own job's outcome, then resumes what it saved.
// tessera-test-timeout: 400
// tessera-test-cost: 9
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <regex>
#include <string>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::run_bounded;
using testing::set_flag;
using testing::tiny_run;

// How long mpirun gives the ranks after SIGTERM (Open MPI 4.1 signals them after this delay and
// kills them after it once more, docs/LAUNCH.md): room for the tiny model's save many times over.
constexpr int kSigkillDelaySeconds = 2;

class StopSignals : public ::testing::Test {
 protected:
  // Writes the token files and starts every scenario's job.
  static void SetUpTestSuite() {
    train_gpt_ = testing::train_gpt_binary();
    if (train_gpt_.empty()) return;
    dir_ = new testing::ScratchDir("signals");
    data_ = (*dir_ / "tokens.bin").string();
    write_token_file(data_, random_tokens(20000, 40));
    // The same tokens with a validation file beside them (train_gpt reads <name>_val.bin as such).
    std::filesystem::create_directories(*dir_ / "validated");
    validated_data_ = (*dir_ / "validated" / "tokens.bin").string();
    write_token_file(validated_data_, random_tokens(20000, 40));
    write_token_file((*dir_ / "validated" / "tokens_val.bin").string(), random_tokens(5000, 40, 7));
    jobs_ = new std::map<std::string, std::shared_future<std::string>>();
    for (const auto& [name, job] : scenarios()) (*jobs_)[name] = std::async(std::launch::async, job).share();
  }
  static void TearDownTestSuite() {
    if (jobs_ != nullptr) {
      for (auto& [name, job] : *jobs_) job.wait();
    }
    delete jobs_;
    delete dir_;
  }
  void SetUp() override {
    if (train_gpt_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }

  // The run directory of scenario `name`.
  static std::filesystem::path run_dir(const std::string& name) { return *dir_ / name; }

  // Scenario `name`'s job log followed by "job exit N", once it has ended.
  static std::string outcome(const std::string& name) { return jobs_->at(name).get(); }

  // Every scenario's job, by name.
  static std::map<std::string, std::function<std::string()>> scenarios() {
    const std::string save_to = "--checkpoint-dir ";
    return {
        {"TERM_rank",
         [=] { return interrupted_job("TERM_rank", "TERM", "rank", save_to + run_dir("TERM_rank").string()); }},
        {"USR1_rank",
         [=] { return interrupted_job("USR1_rank", "USR1", "rank", save_to + run_dir("USR1_rank").string()); }},
        {"USR1_mpirun",
         [=] { return interrupted_job("USR1_mpirun", "USR1", "mpirun", save_to + run_dir("USR1_mpirun").string()); }},
        {"TERM_mpirun",
         [=] {
           return interrupted_job("TERM_mpirun", "TERM", "mpirun", save_to + run_dir("TERM_mpirun").string(),
                                  "--mca odls_base_sigkill_timeout " + std::to_string(kSigkillDelaySeconds));
         }},
        {"no_dir_rank", [] { return interrupted_job("no_dir_rank", "USR1", "rank", "--allow-no-checkpoint-dir"); }},
        {"no_dir_rank1", [] { return interrupted_job("no_dir_rank1", "USR1", "rank1", "--allow-no-checkpoint-dir"); }},
        {"last_step", [] { return signalled_in_the_last_step(); }},
        {"last_validation_no_dir", [] { return signalled_in_last_validation("last_validation_no_dir", ""); }},
        {"last_validation",
         [=] {
           return signalled_in_last_validation("last_validation", save_to + run_dir("last_validation").string());
         }},
    };
  }

  // Starts `mpirun <mpirun_flags> -np 2 train_gpt <flags>` in the background, its log in <name>.log,
  // waits for `wait_for` in its log, sends `signal` to `target` ("mpirun", "rank": the first rank
  // process found, or "rank1": the rank whose OMPI_COMM_WORLD_RANK is 1), and waits for the job.
  // Returns the job's log followed by "job exit N".
  static std::string signalled_job(const std::string& name, const std::string& signal, const std::string& target,
                                   const std::string& flags, const std::string& wait_for,
                                   const std::string& mpirun_flags = "") {
    const std::string log = (*dir_ / (name + ".log")).string();
    const std::string job = "mpirun --oversubscribe " + mpirun_flags + " -np 2 " + train_gpt_ + flags;
    std::string pid = "$M";
    if (target == "rank") pid = "$(pgrep -P $M -f train_gpt | head -1)";
    if (target == "rank1") {
      pid =
          "$(for p in $(pgrep -P $M -f train_gpt); do tr \"\\0\" \"\\n\" < /proc/$p/environ | "
          "grep -qx OMPI_COMM_WORLD_RANK=1 && echo $p; done)";
    }
    const std::string script = job + " > " + log +
                               " 2>&1 & M=$!; "
                               "for i in $(seq 1200); do grep -q \"" +
                               wait_for + "\" " + log +
                               " && break; kill -0 $M || break; "
                               "sleep 0.05; done; "
                               "kill -" +
                               signal + " " + pid + "; wait $M; echo job exit $? >> " + log;
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

  // A run of a million steps (logging every 20th), signalled once step 20 is logged.
  static std::string interrupted_job(const std::string& name, const std::string& signal, const std::string& target,
                                     const std::string& extra, const std::string& mpirun_flags = "") {
    const std::string flags = set_flag(tiny_run(data_), "--log-every", "20");
    return signalled_job(name, signal, target, flags + " --steps 1000000 " + extra, "step    20/", mpirun_flags);
  }

  // One step of a model large enough that it takes seconds; the signal goes to rank 1 once the run
  // has started (the GEMM ceiling is measured just before the step).
  static std::string signalled_in_the_last_step() {
    const std::string flags = " --data " + data_ +
                              " --layers 4 --dim 256 --heads 4 --seq-len 16 --vocab 64 "
                              "--micro-batch 128 --sample-tokens 20 --eval-every 0 --log-every 1 --threads 1 "
                              "--no-memory-check --steps 1 --checkpoint-dir " +
                              run_dir("last_step").string();
    return signalled_job("last_step", "USR1", "rank1", flags, "GEMM ceiling");
  }

  // A 3-step run whose validation (first, and after step 3) takes seconds, signalled on rank 1 once
  // step 3 is logged: while the last validation runs.
  static std::string signalled_in_last_validation(const std::string& name, const std::string& extra) {
    std::string flags = tiny_run(validated_data_);
    flags = set_flag(flags, "--eval-every", "3 --eval-batches 4000");
    flags = set_flag(flags, "--sample-tokens", "20");
    return signalled_job(name, "USR1", "rank1", flags + " --steps 3 " + extra, "step     3/3");
  }

  // True when the run printed its text sample ("sample:" with a tokenizer, "sample (token ids ..."
  // without); the effective configuration's "sample-tokens = N" line does not count.
  static bool printed_a_sample(const std::string& out) {
    return out.find("\nsample:") != std::string::npos || out.find("\nsample (") != std::string::npos;
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
    EXPECT_NE(r.output.find(std::to_string(step + 2) + "/" + std::to_string(step + 2) + "  loss"), std::string::npos)
        << r.output;
  }

  // Scenario `name` sent `signal` to `target` of a long run with a checkpoint directory.
  void expect_checkpoint_after(const std::string& name, const std::string& signal, const std::string& target,
                               const std::string& expected_exit) {
    const std::string out = outcome(name);
    EXPECT_NE(out.find(expected_exit), std::string::npos) << signal << " to " << target << ":\n" << out;
    const long long step = saved_step(run_dir(name));
    ASSERT_GE(step, 20) << signal << " to " << target << " left no checkpoint:\n" << out;
    if (target == "rank") {
      EXPECT_NE(out.find("stop signal: saved step " + std::to_string(step)), std::string::npos) << out;
    }
    expect_resumes(run_dir(name), step);
  }

  static std::string train_gpt_;       // the binary
  static std::string data_;            // the token file
  static std::string validated_data_;  // the same tokens, with a validation file
  static testing::ScratchDir* dir_;
  static std::map<std::string, std::shared_future<std::string>>* jobs_;  // every scenario's job, by name
};

std::string StopSignals::train_gpt_;
std::string StopSignals::data_;
std::string StopSignals::validated_data_;
testing::ScratchDir* StopSignals::dir_ = nullptr;
std::map<std::string, std::shared_future<std::string>>* StopSignals::jobs_ = nullptr;

TEST_F(StopSignals, SigtermToOneRankSavesAndStopsEveryRank) {
  expect_checkpoint_after("TERM_rank", "TERM", "rank", "job exit 0");
}

TEST_F(StopSignals, Sigusr1ToOneRankSavesAndStopsEveryRank) {
  expect_checkpoint_after("USR1_rank", "USR1", "rank", "job exit 0");
}

TEST_F(StopSignals, Sigusr1ToMpirunIsForwardedAndSaves) {
  expect_checkpoint_after("USR1_mpirun", "USR1", "mpirun", "job exit 0");
}

TEST_F(StopSignals, SigtermToMpirunWithTheDocumentedDelaySaves) {
  // mpirun exits non-zero (it was terminated), but the ranks had the delay to save.
  expect_checkpoint_after("TERM_mpirun", "TERM", "mpirun", "job exit");
}

TEST_F(StopSignals, WithoutACheckpointDirectoryTheMessageSaysNothingWasSaved) {
  const std::string out = outcome("no_dir_rank");
  EXPECT_NE(out.find("job exit 0"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing was saved (no --checkpoint-dir)"), std::string::npos) << out;
}

TEST_F(StopSignals, OnANonZeroRankWithoutACheckpointDirectoryRankZeroSaysNothingWasSaved) {
  const std::string out = outcome("no_dir_rank1");
  EXPECT_NE(out.find("job exit 0"), std::string::npos) << out;
  const std::regex line(R"(stop signal: stopping after step ([0-9]+); nothing was saved \(no --checkpoint-dir\))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, line)) << out;
  EXPECT_GE(std::stoll(m[1]), 20) << out;
}

TEST_F(StopSignals, DuringTheLastStepItIsSavedAndTheRunStops) {
  const std::filesystem::path run_dir = StopSignals::run_dir("last_step");
  const std::string out = outcome("last_step");
  EXPECT_NE(out.find("job exit 0"), std::string::npos) << out;
  EXPECT_NE(out.find("stop signal (after the last step): saved step 1 to " + run_dir.string() + ", stopping"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("memory of rank 0"), std::string::npos) << "it went on after the stop:\n" << out;
  EXPECT_EQ(saved_step(run_dir), 1) << out;
}

TEST_F(StopSignals, DuringTheLastValidationWithoutACheckpointDirectory) {
  const std::string out = outcome("last_validation_no_dir");
  EXPECT_NE(out.find("job exit 0"), std::string::npos) << out;
  EXPECT_NE(out.find("stop signal (after the last step): stopping after step 3; nothing was saved "
                     "(no --checkpoint-dir)"),
            std::string::npos)
      << out;
  EXPECT_FALSE(printed_a_sample(out)) << "it went on to the sample:\n" << out;
}

TEST_F(StopSignals, DuringTheLastValidationTheLastStepIsSavedAndResumesAtTheEnd) {
  const std::filesystem::path run_dir = StopSignals::run_dir("last_validation");
  const std::string out = outcome("last_validation");
  EXPECT_NE(out.find("job exit 0"), std::string::npos) << out;
  EXPECT_NE(out.find("stop signal (after the last step): saved step 3 to " + run_dir.string() + ", stopping"),
            std::string::npos)
      << out;
  EXPECT_FALSE(printed_a_sample(out)) << "it went on to the sample:\n" << out;
  EXPECT_EQ(saved_step(run_dir), 3) << out;
  // A requeued job with the same flags has nothing left to train.
  const auto again = run_bounded(train_gpt_ + tiny_run(validated_data_) + " --steps 3 --checkpoint-dir " +
                                 run_dir.string() + " --resume auto");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("at step 3"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("  loss "), std::string::npos) << "it trained again:\n" << again.output;
}

}  // namespace
}  // namespace tessera
