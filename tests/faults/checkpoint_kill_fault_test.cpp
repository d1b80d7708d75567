// kill -9 during a 2-rank train_gpt run that saves every step with --keep-last 2, then
// `--resume auto`: it loads the newest whole checkpoint (the step `latest` resolves to after the
// kill) and runs to the last step. Kills are timed by watching the run directory, never by sleeping:
//  * during a save: when a step_N.tmp directory appears (a save in progress) — the whole job, or
//    one rank (1, a writer; or 0, the committer);
//  * during retention: when `latest` moves to a new checkpoint (rank 0 applies --keep-last right
//    after) — the whole job, or rank 0.
// The deterministic kill at each phase of a save, retention's included, is in
// tests/checkpointing/training_checkpointer_test.cpp; this test kills from outside, as a node
// failure or the OOM killer would. The five cases run at once, each with its own job, run directory
// and watcher (a job mostly waits on MPI's start-up and its saves).
// tessera-test-timeout: 400
// tessera-test-cost: 7
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "checkpoint_fault_support.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/run_directory_lock.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

constexpr int kSteps = 30;
constexpr int kChildSeconds = 120;
constexpr auto kKillDeadline = std::chrono::seconds(90);

// Every process below `root` (children, their children, ...), from /proc.
std::vector<pid_t> descendants(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    std::getline(stat, text);
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    char state = 0;
    pid_t parent = 0;
    rest >> state >> parent;
    children[parent].push_back(static_cast<pid_t>(std::stoi(name)));
  }
  std::vector<pid_t> out, todo{root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    for (pid_t c : children[p]) {
      out.push_back(c);
      todo.push_back(c);
    }
  }
  return out;
}

// The MPI rank of process `pid` (OMPI_COMM_WORLD_RANK in its environment), or -1.
int mpi_rank_of(pid_t pid) {
  std::ifstream environ("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string entry;
  while (std::getline(environ, entry, '\0')) {
    if (entry.rfind("OMPI_COMM_WORLD_RANK=", 0) == 0) return std::stoi(entry.substr(21));
  }
  return -1;
}

// A job started in its own process group, its output in a file.
class BackgroundJob {
 public:
  BackgroundJob(const std::string& command, const fs::path& log) {
    const std::string line = "exec " + command + " > " + log.string() + " 2>&1";  // before fork: threads run
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
  }
  ~BackgroundJob() { kill_all(); }

  // The wait status once ended (WEXITSTATUS, or 128 + the signal), -1 while running.
  int exit_status() const {
    if (status_ < 0) return -1;
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }
  bool running() {
    if (status_ >= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return status_ < 0;
  }
  // SIGKILL to the process of MPI rank `rank`; false when it is not (yet) there.
  bool kill_rank(int rank) {
    for (pid_t p : descendants(pid_)) {
      if (mpi_rank_of(p) == rank) return ::kill(p, SIGKILL) == 0;
    }
    return false;
  }
  // SIGKILL to mpirun and every rank.
  void kill_all() {
    if (status_ >= 0 && descendants(pid_).empty()) return;
    const std::vector<pid_t> all = descendants(pid_);
    ::kill(-pid_, SIGKILL);
    for (pid_t p : all) ::kill(p, SIGKILL);
    while (running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Waits for the job to end (killing it after `limit`); true when it ended by itself.
  bool wait(std::chrono::seconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (running()) {
      if (std::chrono::steady_clock::now() > end) {
        kill_all();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

// The step of a save in progress in `run` (a step_N.tmp directory), or -1.
std::int64_t save_in_progress(const fs::path& run) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
      if (auto step = parse_step_dir_name(name.substr(0, name.size() - 4))) return *step;
    }
  }
  return -1;
}

// The step `latest` names, or -1.
std::int64_t latest_step(const fs::path& run) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(run / kLatestName, ec);
  if (ec) return -1;
  return parse_step_dir_name(target.filename().string()).value_or(-1);
}

struct KillCase {
  std::string name;
  bool during_save;  // kill when a save is in progress (step_N.tmp), else when `latest` moves
  int rank;          // -1: the whole job
};

TEST(CheckpointKill, ResumeAutoContinuesFromTheLastWholeCheckpoint) {
  ScratchDir scratch("ckpt_kill");
  const std::string data = write_tokens(scratch.path());
  const std::string mpirun = "mpirun --oversubscribe -x OMP_NUM_THREADS=1 -np 2 ";
  const std::vector<KillCase> cases = {
      {"whole job during a save", true, -1}, {"rank 1 during a save", true, 1},
      {"rank 0 during a save", true, 0},     {"whole job during retention", false, -1},
      {"rank 0 during retention", false, 0},
  };
  // The cases share nothing but the token file: each runs on a thread of its own, all at once.
  std::vector<std::function<void()>> checks;
  for (const KillCase& c : cases)
    checks.push_back([&, c, index = checks.size()] {
      const fs::path run = scratch / ("run_" + std::to_string(index));
      std::int64_t seen = -1;  // the step being saved, or the step `latest` moved to, when killed
      const std::string save = " --checkpoint-dir " + run.string() + " --save-every 1 --keep-last 2";
      {
        BackgroundJob job(mpirun + tiny_train_gpt(data, kSteps) + save, run.string() + ".killed.log");
        const auto end = std::chrono::steady_clock::now() + kKillDeadline;
        bool killed = false;
        while (!killed && job.running() && std::chrono::steady_clock::now() < end) {
          seen = c.during_save ? save_in_progress(run) : latest_step(run);
          if (seen >= 4) {
            if (c.rank < 0) {
              job.kill_all();
              killed = true;
            } else {
              killed = job.kill_rank(c.rank);
            }
          } else {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
          }
        }
        ASSERT_TRUE(killed) << c.name << ": the moment to kill never came; the job's output:\n"
                            << run_child_job("cat " + run.string() + ".killed.log", 10).output;
        EXPECT_TRUE(job.wait(std::chrono::seconds(60))) << c.name << ": the job hung after the kill";
        EXPECT_NE(job.exit_status(), 0) << c.name << ": the job ended as if nothing happened";
      }
      const auto latest = resolve_checkpoint(run);
      ASSERT_TRUE(latest.has_value()) << c.name << ": no checkpoint left";
      const std::int64_t step = parse_step_dir_name(latest->filename().string()).value_or(-1);
      // Killed while saving step `seen`: `latest` is the step before (or `seen` itself when the commit
      // won the race). Killed after `latest` moved to `seen`: that checkpoint (or a newer one) stays.
      EXPECT_GE(step, c.during_save ? seen - 1 : seen) << c.name << ": checkpoints committed before the kill were lost";
      EXPECT_LE(step, c.during_save ? seen : seen + 1) << c.name;
      for (const CommittedCheckpoint& cp : list_checkpoints(run)) {
        EXPECT_TRUE(fs::exists(cp.path / kMetaFileName)) << c.name << ": half-deleted checkpoint " << cp.path;
      }

      std::printf("%s: killed at step %lld, latest is step %lld after the kill\n", c.name.c_str(),
                  static_cast<long long>(seen), static_cast<long long>(step));
      const ChildResult resumed =
          run_child_job(mpirun + tiny_train_gpt(data, kSteps) + save + " --resume auto", kChildSeconds);
      ASSERT_EQ(resumed.exit_code, 0) << c.name << ":\n" << resumed.output;
      EXPECT_TRUE(contains(resumed.output, "resumed from " + latest->string() + " at step " + std::to_string(step)))
          << c.name << ":\n"
          << resumed.output;
      std::vector<int> expected;
      for (int s = static_cast<int>(step) + 1; s <= kSteps; ++s) expected.push_back(s);
      EXPECT_EQ(logged_steps(resumed.output), expected) << c.name << ":\n" << resumed.output;
      EXPECT_EQ(latest_step(run), kSteps) << c.name;
      for (const auto& entry : fs::directory_iterator(run)) {
        const std::string name = entry.path().filename().string();
        EXPECT_TRUE(name == kLatestName || name == kRunLockName || parse_step_dir_name(name).has_value())
            << c.name << ": left behind: " << name;
      }
    });
  all_at_once(checks);
}

}  // namespace
}  // namespace tessera::testing
