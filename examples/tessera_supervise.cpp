// tessera_supervise: runs a training command and starts it again whenever it dies, for machines
// without a batch system that requeues (with Slurm, `sbatch --requeue` does this: docs/LAUNCH.md).
// The command continues where its last checkpoint left off when it resumes itself (train_gpt
// --resume auto); docs/CHECKPOINTS.md says what a restart costs and what it never loses.
//
//   tessera_supervise [--restarts N] [--restart-delay S] -- mpirun -np 8 train_gpt ... --resume auto
//
// The command runs in a process group of its own. It ends the supervisor when it exits 0, or when
// it was stopped by a signal the supervisor forwarded (Ctrl-C, SIGTERM, SIGUSR1, SIGHUP go to the
// whole group: train_gpt saves and stops, and is not started again). Any other end — a non-zero
// exit, a kill — starts it again after --restart-delay seconds, at most --restarts times; the
// supervisor then exits with the command's last status (128 + N for signal N).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "flags/program_options.hpp"

namespace {

std::atomic<pid_t> child_group{0};
std::atomic<int> forwarded{0};  // the last signal passed on to the command, 0: none

void forward(int sig) {
  forwarded.store(sig);
  const pid_t group = child_group.load();
  if (group > 0) ::kill(-group, sig);
}

// Starts `command` in a process group of its own; returns its wait status (-1: not started).
int run_once(const std::vector<char*>& command) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::setpgid(0, 0);
    for (const int sig : {SIGINT, SIGTERM, SIGUSR1, SIGHUP}) ::signal(sig, SIG_DFL);
    ::execvp(command[0], command.data());
    std::fprintf(stderr, "tessera_supervise: cannot run %s: %s\n", command[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: a signal arriving before the child ran setpgid reaches it
  child_group.store(pid);
  if (const int sig = forwarded.load(); sig != 0) ::kill(-pid, sig);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  child_group.store(0);
  return status;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "ended (status " + std::to_string(status) + ")";
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Everything after "--" is the command, passed on untouched.
  int split = 1;
  while (split < argc && std::strcmp(argv[split], "--") != 0) ++split;
  std::vector<char*> command(argv + std::min(split + 1, argc), argv + argc);
  command.push_back(nullptr);

  int restarts = 10;
  double delay = 1.0;
  tessera::po::options_description options("Restarts");
  options.add_options()("restarts", tessera::value_with_default(&restarts),
                        "start the command again at most N times after it dies")(
      "restart-delay", tessera::value_with_default(&delay), "seconds to wait before each restart");
  tessera::ProgramOptions program("tessera_supervise",
                                  "tessera_supervise: run a training command, and start it again whenever it dies\n"
                                  "Usage: tessera_supervise [--restarts N] [--restart-delay S] -- COMMAND [ARGS...]\n"
                                  "The command should resume by itself (train_gpt --resume auto).");
  program.add(options);
  try {
    if (!program.parse(split, argv)) return 0;
    if (command.size() < 2)
      throw std::invalid_argument("give the command to run after --: tessera_supervise -- mpirun ...");
    if (restarts < 0) throw std::invalid_argument("--restarts " + std::to_string(restarts) + ": give 0 or more");
    if (!(delay >= 0.0)) throw std::invalid_argument("--restart-delay: give 0 or more seconds");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_supervise: %s\n", e.what());
    return 2;
  }
  bool resumes = false, trains = false;
  for (std::size_t i = 0; i + 1 < command.size(); ++i) {
    const std::string arg = command[i];
    trains = trains || arg.ends_with("train_gpt");
    resumes = resumes || arg == "--resume" || arg.starts_with("--resume=");
  }
  if (trains && !resumes) {
    std::fprintf(stderr,
                 "tessera_supervise: warning: the command runs train_gpt without --resume: each restart would "
                 "start over; add --resume auto (and --checkpoint-dir, --save-every)\n");
  }

  struct sigaction action {};
  action.sa_handler = forward;
  sigemptyset(&action.sa_mask);
  for (const int sig : {SIGINT, SIGTERM, SIGUSR1, SIGHUP}) ::sigaction(sig, &action, nullptr);

  for (int attempt = 0;; ++attempt) {
    const auto started = std::chrono::steady_clock::now();
    const int status = run_once(command);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (status == -1) {
      std::fprintf(stderr, "tessera_supervise: cannot start %s: %s\n", command[0], std::strerror(errno));
      return 1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      if (attempt > 0) std::fprintf(stderr, "tessera_supervise: the command ended well after %d restart(s)\n", attempt);
      return 0;
    }
    if (const int sig = forwarded.load(); sig != 0) {
      std::fprintf(stderr, "tessera_supervise: the command %s after %s was passed on to it; not restarting\n",
                   describe(status).c_str(), strsignal(sig));
      return exit_code(status);
    }
    if (attempt >= restarts) {
      std::fprintf(stderr,
                   "tessera_supervise: the command %s after %.1f s; giving up after %d restart(s) (--restarts %d)\n",
                   describe(status).c_str(), seconds, attempt, restarts);
      return exit_code(status);
    }
    std::fprintf(stderr, "tessera_supervise: the command %s after %.1f s; restart %d of %d in %g s\n",
                 describe(status).c_str(), seconds, attempt + 1, restarts, delay);
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    if (forwarded.load() != 0) return exit_code(status);  // stopped while waiting
  }
}
