// run_distributed: MPI session, rank discovery, communicators, body, and the rank-failure path
// that turns an exception on one rank into a job abort with its message.
#include "tessera/launch/run_distributed.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "tessera/comm/job_abort.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/launch/comm_env.hpp"
#include "tessera/launch/failure_agreement.hpp"
#include "tessera/launch/launch_check.hpp"
#include "tessera/launch/launcher_env.hpp"
#include "tessera/launch/mpi_session.hpp"
#include "tessera/launch/rank_info.hpp"
#include "tessera/launch/session_directory.hpp"

namespace tessera {
namespace {

// Rank and size as MPI knows them, or as the launcher says when MPI is not up; "?" if neither.
std::string rank_prefix() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  std::string rank = "?";
  std::string size = "?";
  if (initialized && !finalized) {
    int r = 0;
    int n = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    rank = std::to_string(r);
    size = std::to_string(n);
  }
  return "rank " + rank + "/" + size + " (host " + this_hostname() + ")";
}

int world_size_or_one() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return 1;
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// The command's name for messages: argv[0] without its directory.
std::string program_name(int argc, char** argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr) return "the program";
  const std::string path = argv[0];
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// How long a failing rank waits for the others to fail too before it ends the job on its own.
constexpr std::chrono::seconds kAllFailGrace{2};

// Prints the failure; aborts the job when other ranks could be left waiting, else returns 1. A lone
// process names the program, not its rank: "train_gpt: --steps must be positive, got 0". When every
// rank fails within kAllFailGrace, rank 0 alone says so, once per distinct message
// ("train_gpt: ... (every one of the 4 ranks)"), and every rank returns 1.
int fail_rank(const std::string& program, const std::string& message, FailureAgreement& agreement) {
  if (world_size_or_one() > 1) {
    if (const auto messages = agreement.all_failed(message, kAllFailGrace)) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      if (rank == 0) {
        for (const std::string& line : grouped_failures(*messages))
          std::fprintf(stderr, "%s: %s\n", program.c_str(), line.c_str());
        std::fflush(stderr);
      }
      // Every rank ends normally (communicators closed, MPI finalised), bounded in time should a
      // communicator still wait on a collective the failure cut short.
      std::thread([] {
        std::this_thread::sleep_for(kAbortGrace);
        std::_Exit(1);
      }).detach();
      return 1;
    }
    abort_job(rank_prefix() + ": " + message, 1);
  }
  const std::string line = program + ": " + message;
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  return 1;
}

}  // namespace

int run_distributed(int argc, char** argv, const DistributedBody& body) {
  // The environment as it was before MPI_Init, which may add variables of its own (a singleton sets
  // PMIX_RANK); a malformed value is reported once MPI is up, like every other failure.
  const EnvLookup env = environment_snapshot();
  LauncherEnv launcher;
  std::string launcher_error;
  try {
    launcher = read_launcher_env(env);
  } catch (const std::exception& error) {
    launcher_error = error.what();
  }
  const bool alone = launcher_error.empty() && launcher.launcher == Launcher::kNone;
  if (alone) {  // under a launcher, the launcher made the session directory already
    if (const std::string problem = session_directory_problem(); !problem.empty()) {
      std::fprintf(stderr, "%s: %s\n", program_name(argc, argv).c_str(), problem.c_str());
      return 1;
    }
  }
  MpiSession session(argc, argv, alone ? MpiStart::kAlone : MpiStart::kLaunched);
  FailureAgreement failures;  // collective: every rank makes it here, before anything can fail
  // Declared outside the try block: when body throws, the communicators stay alive (a destructor
  // could wait on a collective whose peers wait for this rank) until the job has been aborted.
  std::unique_ptr<MpiCommunicator> world;
  std::unique_ptr<DistributedContext> context;
  try {
    if (!launcher_error.empty()) throw std::invalid_argument(launcher_error);
    check_launch(env, world_size_or_one(), program_name(argc, argv));  // before any work
    const CommOptions options = comm_options_from_env(env);
    const bool show_ranks = env_switch(env, "TESSERA_SHOW_RANKS", "print each rank's place at start").value_or(false);
    world = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, options);
    RankInfo info = discover_rank_info(*world, launcher);
    if (show_ranks) {
      std::printf("%s\n", info.describe().c_str());
      std::fflush(stdout);
    }
    context = std::make_unique<DistributedContext>(std::move(world), std::move(info), options, argc, argv);
    return body(*context);
  } catch (const std::exception& error) {
    return fail_rank(program_name(argc, argv), error.what(), failures);
  } catch (...) {
    return fail_rank(program_name(argc, argv), "unknown exception (not derived from std::exception)", failures);
  }
}

}  // namespace tessera
