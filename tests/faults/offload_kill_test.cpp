// kill -9 of a two-rank ZeRO-3 job whose parameters and optimizer state live in NVMe offload files,
// in the middle of its steps: the files it leaves behind are stale, so the resumed job replaces them
// (and says so) instead of reading them as state, continues from the last whole checkpoint, removes
// its files at its clean exit, and logs the same losses as a resume of that checkpoint without
// offload. The kill is timed by the run directory and the log (the step after the second save),
// and the two resumes, which only read that checkpoint, run at once.
// tessera-test-timeout: 240
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/text/data/token_file.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using CommandResult = testing::ProcessResult;

namespace fs = std::filesystem;

// Starts `command` through the shell in its own process group (so mpirun and its ranks can be
// killed together), output to `log`.
pid_t start_group(const std::string& command, const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    const std::string line = "exec " + command + " > " + log.string() + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

// The step `latest` points at, or -1.
long latest_step(const fs::path& run_dir) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(run_dir / "latest", ec);
  if (ec) return -1;
  const std::string name = target.filename().string();
  const std::regex step_name(R"(step_(\d+))");
  std::smatch m;
  return std::regex_match(name, m, step_name) ? std::stol(m[1]) : -1;
}

// Waits until no process holds the lock on `file` (ranks orphaned by a killed mpirun live on for a
// moment); false at the deadline.
bool wait_unlocked(const fs::path& file, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    const int fd = ::open(file.c_str(), O_RDONLY);
    if (fd < 0) return true;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    if (free) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::map<long, std::string> losses_by_step(const std::string& log) {
  std::map<long, std::string> out;
  const std::regex line(R"(step\s+(\d+)/\d+  loss ([0-9.]+)  )");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    out[std::stol((*it)[1])] = (*it)[2];
  }
  return out;
}

TEST(OffloadKill, KilledNvmeRunResumesAndReplacesItsStaleFiles) {
  const char* bin = std::getenv("TESSERA_BIN_DIR");
  if (bin == nullptr) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  const std::string train_gpt = std::string(bin) + "/train_gpt";
  testing::ScratchDir scratch("offload_kill");
  ASSERT_FALSE(scratch.path().empty());

  std::vector<std::int32_t> tokens(20000);
  Rng rng(11);
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng.below(40));
  const std::string data = (scratch / "tokens.bin").string();
  write_token_file(data, tokens);
  const fs::path offload = scratch / "offload";
  const fs::path run_dir = scratch / "run";
  fs::create_directories(offload);

  const std::string model = " --data " + data +
                            " --layers 2 --dim 32 --heads 2 --seq-len 16 --vocab 64 --sample-tokens 0 "
                            "--eval-every 0 --log-every 1 --threads 1 --zero 3 --micro-batch 2 --grad-accum 2";
  const std::string nvme =
      " --offload-optimizer nvme --offload-params nvme --offload-path " + offload.string() + " --offload-block 64";
  const std::string mpirun = "mpirun --oversubscribe -np 2 ";

  // The job to kill: far more steps than it will live, a checkpoint every 3 steps.
  const pid_t job = start_group(
      mpirun + train_gpt + model + nvme + " --steps 100000 --save-every 3 --checkpoint-dir " + run_dir.string(),
      scratch / "killed.log");
  // Killed in the steps after the save of step 6: once step 7 is logged, the offload files have
  // moved on from the checkpoint.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  const auto logged_step_7 = [&] {
    std::ifstream log(scratch / "killed.log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    return text.find("step     7/") != std::string::npos;
  };
  while (!(latest_step(run_dir) >= 6 && logged_step_7()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool reached = latest_step(run_dir) >= 6;
  // mpirun and every rank at once (the ranks are not in mpirun's process group): every process
  // whose command line runs train_gpt on this test's data ("[t]" keeps pkill's own shell out).
  const int killed = std::system(("pkill -9 -f '[t]rain_gpt --data " + data + "'").c_str());
  ::kill(-job, SIGKILL);
  int status = 0;
  ::waitpid(job, &status, 0);
  ASSERT_TRUE(reached) << "the job did not reach its second checkpoint in time";
  ASSERT_EQ(killed, 0) << "pkill found nothing to kill";
  for (int rank = 0; rank < 2; ++rank) {
    const fs::path file = offload / ("tessera-offload-rank" + std::to_string(rank) + ".bin");
    EXPECT_TRUE(fs::exists(file)) << "a killed job leaves its offload files behind";
    ASSERT_TRUE(wait_unlocked(file, std::chrono::seconds(60))) << "the killed job's ranks did not end";
  }

  const long saved = latest_step(run_dir);
  ASSERT_GE(saved, 6);

  // Resume with offload: the stale files are replaced, never read, and removed at the clean exit.
  const long until = saved + 4;
  const std::string step_dir =
      (run_dir / ("step_" + std::string(7 - std::to_string(saved).size(), '0') + std::to_string(saved))).string();
  const std::vector<CommandResult> resumes = testing::run_bounded_all(
      {mpirun + train_gpt + model + nvme + " --steps " + std::to_string(until) +
           " --save-every 1000 --resume auto --checkpoint-dir " + run_dir.string(),
       // The same checkpoint resumed without offload.
       mpirun + train_gpt + model + " --steps " + std::to_string(until) + " --resume " + step_dir},
      240);  // each under a time bound: a hung program fails the test instead of hanging it
  const CommandResult& resumed = resumes[0];
  const CommandResult& plain = resumes[1];
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step " + std::to_string(saved)), std::string::npos) << resumed.output;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string file = "tessera-offload-rank" + std::to_string(rank) + ".bin";
    EXPECT_NE(resumed.output.find("rank " + std::to_string(rank) + ": offload: replaced " + (offload / file).string()),
              std::string::npos)
        << resumed.output;
    EXPECT_FALSE(fs::exists(offload / file)) << "removed at a clean exit";
  }

  // The same checkpoint resumed without offload gives the same losses.
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const auto with_offload = losses_by_step(resumed.output);
  const auto without = losses_by_step(plain.output);
  ASSERT_EQ(with_offload.size(), 4u) << resumed.output;
  EXPECT_EQ(with_offload, without) << resumed.output << "\n---\n" << plain.output;
}

}  // namespace
}  // namespace tessera
