// One job per run directory, through train_gpt: while a job trains and saves into a directory, a
// second job on it (fresh or --resume auto) refuses before touching anything, naming the holder's
// host and PID; the first job's checkpoints are whole and it ends normally. A job killed with
// SIGKILL leaves its lock behind; the next job takes it over, says so, and resumes.
// Waits poll every 20 ms; the two refused jobs start together (the first names the holder), and the
// checkpoints are verified a few at a time.
// tessera-test-timeout: 240
// tessera-test-cost: 6
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "checkpoint_fault_support.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

constexpr int kLockLimit = 60;  // seconds per job
constexpr auto kPoll = std::chrono::milliseconds(20);
constexpr int kPolls = 1500;  // 30 s

// Starts `command` in the background (bounded by kLockLimit), output into `log`.
void start_background(const std::string& command, const fs::path& log) {
  const std::string line =
      "timeout -s KILL " + std::to_string(kLockLimit) + " " + command + " > " + log.string() + " 2>&1 &";
  ASSERT_EQ(std::system(line.c_str()), 0);
}

// Waits (at most 30 s) until `dir` holds a committed checkpoint beyond `after`.
bool wait_for_checkpoint(const fs::path& dir, std::int64_t after) {
  for (int i = 0; i < kPolls; ++i) {
    const auto all = list_checkpoints(dir);
    if (!all.empty() && all.back().step > after) return true;
    std::this_thread::sleep_for(kPoll);
  }
  return false;
}

std::string read_all(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The PID a refusal names ("..., PID 1234, started ...").
pid_t holder_pid(const std::string& message) {
  std::smatch m;
  return std::regex_search(message, m, std::regex(", PID ([0-9]+), started ")) ? std::stoi(m[1]) : -1;
}

bool wait_until_gone(pid_t pid) {
  for (int i = 0; i < kPolls && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(kPoll);
  return ::kill(pid, 0) != 0;
}

TEST(RunDirLock, ASecondJobRefusesWhileTheFirstTrains) {
  ScratchDir scratch("run_dir_lock");
  const std::string data = write_tokens(scratch.path());
  const fs::path run = scratch / "run";
  const std::string save = " --checkpoint-dir " + run.string() + " --save-every 20";
  start_background(tiny_train_gpt(data, 1000000) + save, scratch / "first.log");
  ASSERT_TRUE(wait_for_checkpoint(run, 0)) << read_all(scratch / "first.log");

  const std::vector<ChildResult> refused = run_child_jobs(
      {tiny_train_gpt(data, 5) + save + " --resume auto", tiny_train_gpt(data, 5) + save + " --overwrite"}, kLockLimit);
  for (const ChildResult& second : refused) {
    EXPECT_EQ(second.exit_code, 1) << second.output;
    EXPECT_TRUE(contains(second.output, run.string() + " is in use by another job (host ")) << second.output;
    EXPECT_TRUE(logged_steps(second.output).empty()) << "trained anyway:\n" << second.output;
  }
  const ChildResult& second = refused.front();
  const pid_t first = holder_pid(second.output);
  ASSERT_GT(first, 0) << second.output;
  ASSERT_EQ(::kill(first, 0), 0) << "the named holder is not the running job: " << second.output;

  // The first job stops cleanly (a stop signal saves), and everything it saved is whole.
  ASSERT_EQ(::kill(first, SIGUSR1), 0);
  ASSERT_TRUE(wait_until_gone(first));
  const std::string log = read_all(scratch / "first.log");
  EXPECT_TRUE(contains(log, "stop signal")) << log;
  const std::vector<CommittedCheckpoint> saved = list_checkpoints(run);
  std::vector<std::string> verifies;
  for (const CommittedCheckpoint& c : saved) verifies.push_back(tessera_ckpt_bin() + " verify " + c.path.string());
  const std::vector<ChildResult> verified = run_child_jobs(verifies, kLockLimit, 4);
  for (std::size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(verified[i].exit_code, 0) << saved[i].path << ":\n" << verified[i].output;
  }
  // Released: the next job resumes without a word about the lock.
  const std::int64_t stopped_at = list_checkpoints(run).back().step;
  const ChildResult next =
      run_child_job(tiny_train_gpt(data, static_cast<int>(stopped_at) + 2) + save + " --resume auto", kLockLimit);
  ASSERT_EQ(next.exit_code, 0) << next.output;
  EXPECT_FALSE(contains(next.output, "without releasing")) << next.output;
}

TEST(RunDirLock, ALockLeftByAKilledJobIsTakenOver) {
  ScratchDir scratch("run_dir_lock_kill");
  const std::string data = write_tokens(scratch.path());
  const fs::path run = scratch / "run";
  const std::string save = " --checkpoint-dir " + run.string() + " --save-every 20";
  start_background(tiny_train_gpt(data, 1000000) + save, scratch / "killed.log");
  ASSERT_TRUE(wait_for_checkpoint(run, 0)) << read_all(scratch / "killed.log");
  const pid_t holder = holder_pid(run_child_job(tiny_train_gpt(data, 5) + save + " --resume auto", kLockLimit).output);
  ASSERT_GT(holder, 0);
  ASSERT_EQ(::kill(holder, SIGKILL), 0);
  ASSERT_TRUE(wait_until_gone(holder));

  const std::int64_t latest =
      resolve_checkpoint(run) ? parse_step_dir_name(resolve_checkpoint(run)->filename()).value() : 0;
  const ChildResult next =
      run_child_job(tiny_train_gpt(data, static_cast<int>(latest) + 2) + save + " --resume auto", kLockLimit);
  ASSERT_EQ(next.exit_code, 0) << next.output;
  EXPECT_TRUE(contains(next.output, "ended without releasing it; this job takes it over")) << next.output;
  EXPECT_TRUE(contains(next.output, "PID") || contains(next.output, std::to_string(holder))) << next.output;
  EXPECT_TRUE(contains(next.output, " " + std::to_string(holder) + " ")) << next.output;
}

}  // namespace
}  // namespace tessera::testing
