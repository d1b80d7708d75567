// examples/slurm/train_gpt_cpu.sbatch on a real one-node Slurm (tests/support/slurm_cluster.hpp),
// used as written: the test sets only sbatch options (one node, 2 tasks of 1 CPU, its output file)
// and the script's environment variables (TESSERA_BIN, TESSERA_CHECKPOINT_DIR). It checks that
//  * srun --mpi=pmix starts 2 ranks that find each other: both report "rank R/2 ... launched by
//    srun" and train_gpt trains on 2 ranks;
//  * SIGUSR1 to the batch shell (scancel --signal=USR1 --batch, what #SBATCH --signal=B:USR1@120
//    sends before the time limit) reaches every rank through the script: they save a checkpoint at
//    the next step and stop, and the script requeues the job (the cluster has JobRequeue=0: only
//    the script's #SBATCH --requeue allows it);
//  * the requeued job resumes from that checkpoint at the saved step and trains to the end.
// Skips, with the daemons' log lines, where a one-node Slurm cannot start (not root, packages
// missing, a container that forbids it).
// tessera-test-timeout: 400
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/slurm_cluster.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::ScratchDir;
using testing::SlurmCluster;
using testing::train_gpt_binary;

// Steps of about 4 ms (2 ranks of 32 x 32 tokens) on this tiny model: the signal, sent at step
// 200, reaches the ranks well before the end even on a loaded machine.
constexpr int kSteps = 3000;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class SlurmExample : public ::testing::Test {
 protected:
  void SetUp() override {
    train_gpt_ = train_gpt_binary();
    const char* source = std::getenv("TESSERA_SOURCE_DIR");
    if (train_gpt_.empty() || source == nullptr)
      GTEST_SKIP() << "TESSERA_BIN_DIR/TESSERA_SOURCE_DIR are not set (ctest sets them)";
    script_ = std::string(source) + "/examples/slurm/train_gpt_cpu.sbatch";
    if (const std::string why = cluster_.start(); !why.empty()) GTEST_SKIP() << "no one-node Slurm here: " << why;
    write_token_file((dir_ / "tokens.bin").string(), random_tokens(20000, 40));
  }

  // The job's output so far, the daemons' logs after it.
  std::string job_output() const { return read_file(output_) + "\n" + cluster_.logs(); }

  ScratchDir dir_{"slurm"};
  SlurmCluster cluster_{dir_.path()};  // declared after dir_: shut down before the directory goes
  std::string train_gpt_, script_;
  std::filesystem::path output_ = dir_ / "job.out", run_dir_ = dir_ / "run";
};

TEST_F(SlurmExample, TwoRanksTrainSaveOnUsr1RequeueAndResume) {
  // The tiny model of the other process tests; the script adds --checkpoint-dir, --resume auto,
  // --hybrid-group and --threads.
  const std::string args =
      "--data tokens.bin --layers 2 --dim 32 --heads 2 --seq-len 32 --micro-batch 32 --vocab 64 "
      "--sample-tokens 0 --eval-every 0 --no-memory-check --log-every 100 --steps " +
      std::to_string(kSteps);
  const auto submitted =
      cluster_.command("TESSERA_BIN=" + train_gpt_ + " TESSERA_CHECKPOINT_DIR=" + run_dir_.string() +
                           " sbatch --parsable --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 "
                           "--time=10 --chdir=" +
                           dir_.path().string() + " --output=" + output_.string() + " " + script_ + " " + args,
                       30);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output << cluster_.logs();
  const std::string job = submitted.output.substr(0, submitted.output.find_first_of(";\n"));

  // Rank discovery and training progress.
  const bool training = SlurmCluster::wait_for(
      [&] {
        const std::string out = read_file(output_);
        const std::string state = cluster_.job_field(job, "JobState");
        return out.find("step   200/") != std::string::npos || (state != "RUNNING" && state != "PENDING");
      },
      120);
  std::string out = read_file(output_);
  ASSERT_TRUE(training && out.find("step   200/") != std::string::npos)
      << "job " << job << " did not reach step 200 (state " << cluster_.job_field(job, "JobState") << "):\n"
      << job_output();
  for (const std::string part : {"rank 0/2 (host ", "rank 1/2 (host ", "launched by srun", "2 rank(s)",
                                 "hybrid groups of 2", "(requeued 0 times)"}) {
    EXPECT_NE(out.find(part), std::string::npos) << "expected \"" << part << "\" in\n" << out;
  }

  // A preemption: SIGUSR1 to the batch shell only.
  const auto signalled = cluster_.command("scancel --signal=USR1 --batch " + job, 20);
  ASSERT_EQ(signalled.exit_code, 0) << signalled.output;
  const bool requeued = SlurmCluster::wait_for(
      [&] {
        return cluster_.job_field(job, "Restarts") == "1" || cluster_.job_field(job, "JobState") == "COMPLETED" ||
               cluster_.job_field(job, "JobState") == "FAILED";
      },
      60);
  ASSERT_TRUE(requeued && cluster_.job_field(job, "Restarts") == "1")
      << "job " << job << " was not requeued (state " << cluster_.job_field(job, "JobState") << "):\n"
      << job_output();
  out = read_file(output_);
  const std::regex saved_line("stop signal: saved step ([0-9]+) to " + run_dir_.string() + ", stopping");
  std::smatch saved;
  ASSERT_TRUE(std::regex_search(out, saved, saved_line)) << out;
  const long long step = std::stoll(saved[1]);
  EXPECT_GE(step, 200) << out;
  EXPECT_LT(step, kSteps) << "the run had finished before the signal came; nothing was tested:\n" << out;
  EXPECT_NE(out.find("tessera: SIGUSR1 at "), std::string::npos) << out;
  EXPECT_NE(out.find("tessera: requeueing job " + job), std::string::npos) << out;
  char name[32];
  std::snprintf(name, sizeof name, "step_%07lld", step);
  EXPECT_TRUE(std::filesystem::exists(run_dir_ / name)) << run_dir_ / name << " is missing:\n" << out;

  // The requeued job starts again once its credential has expired (cred_expire, 10 s here).
  const bool finished = SlurmCluster::wait_for(
      [&] {
        const std::string state = cluster_.job_field(job, "JobState");
        return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" || state == "TIMEOUT";
      },
      240);
  out = read_file(output_);
  ASSERT_TRUE(finished && cluster_.job_field(job, "JobState") == "COMPLETED")
      << "the requeued job " << job << " did not complete (state " << cluster_.job_field(job, "JobState") << "):\n"
      << job_output();
  EXPECT_NE(out.find("(requeued 1 times)"), std::string::npos) << out;
  const std::string resumed = "resumed from " + (run_dir_ / name).string() + " at step " + std::to_string(step);
  const std::size_t resumed_at = out.find(resumed);
  ASSERT_NE(resumed_at, std::string::npos) << "expected \"" << resumed << "\" in\n" << out;
  // After the resume the steps go on from the saved one to the end.
  const std::string after = out.substr(resumed_at);
  std::smatch first;
  ASSERT_TRUE(std::regex_search(after, first, std::regex(R"(step +([0-9]+)/)" + std::to_string(kSteps)))) << after;
  EXPECT_GT(std::stoll(first[1]), step) << after;
  EXPECT_NE(after.find("step  " + std::to_string(kSteps) + "/" + std::to_string(kSteps) + "  loss"), std::string::npos)
      << after;
  EXPECT_EQ(after.find("stop signal"), std::string::npos) << after;
}

}  // namespace
}  // namespace tessera
