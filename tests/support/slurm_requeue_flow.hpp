// The preemption flow of examples/slurm/train_gpt_cpu.sbatch on a test Slurm (one node, or simulated
// nodes): sbatch the script as written (the test sets only sbatch options, the script's
// environment variables TESSERA_BIN, TESSERA_CHECKPOINT_DIR and, on simulated nodes, Open MPI's
// yield-when-idle: NodeCluster::kYieldWhenIdleEnv), wait until the job trains, check its
// output, send SIGUSR1 to the batch shell (what #SBATCH --signal=B:USR1@120 does before the time
// limit), check that every rank saved at its next step and the script requeued the job, and that
// the requeued job resumed from that checkpoint and trained to the end.
//
// The run's --steps come from its --config file. The first run is long (it only has to be still
// training when the signal comes); once it has saved at step S, the test rewrites the file to
// S + kStepsAfterResume, so the requeued job -- which reads the file when it starts, at least
// cred_expire + 1 s after the requeue -- trains those steps to its end instead of the thousands the
// first run had left.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/slurm_cluster.hpp"

namespace tessera::testing {

// The test signals the job once it has logged this step (--log-every 10), and the requeued job
// trains this many steps past the saved one.
inline constexpr int kSignalAtStep = 20;
inline constexpr int kStepsAfterResume = 20;

struct SlurmRequeueJob {
  std::string train_gpt, script;      // the binary; the batch script
  std::filesystem::path dir;          // the job's working directory (holds the token file)
  std::filesystem::path run_dir;      // TESSERA_CHECKPOINT_DIR
  std::filesystem::path output;       // the job's output file
  std::filesystem::path config;       // the run's --config file: its `steps`
  std::string sbatch_options;         // e.g. "--nodes=2 --ntasks-per-node=2"
  std::string args;                   // train_gpt's arguments (the script adds its own)
  std::string environment;            // more of the job's environment ("VAR=value ...")
  int steps = 0;                      // the first run's steps (in `config`)
  std::vector<std::string> expected;  // in the output once the job trains
};

// The tiny model of the Slurm tests (2 layers, 32 channels, sequences of 32, a 64-token vocabulary)
// for `steps` steps of `micro_batch` sequences per rank, logged every 10 steps, in `dir` (which
// holds tokens.bin): checkpoints in dir/run, output in dir/job.out, the steps in dir/job.ini.
inline SlurmRequeueJob tiny_requeue_job(const std::string& train_gpt, const std::string& script,
                                        const std::filesystem::path& dir, const std::string& sbatch_options,
                                        int micro_batch, int steps) {
  SlurmRequeueJob job;
  job.train_gpt = train_gpt;
  job.script = script;
  job.dir = dir;
  job.run_dir = dir / "run";
  job.output = dir / "job.out";
  job.config = dir / "job.ini";
  job.sbatch_options = sbatch_options;
  job.steps = steps;
  job.args =
      "--data tokens.bin --layers 2 --dim 32 --heads 2 --seq-len 32 --micro-batch " + std::to_string(micro_batch) +
      " --vocab 64 --sample-tokens 0 --eval-every 0 --no-memory-check --log-every 10 --config " + job.config.string();
  return job;
}

inline std::string read_job_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Sets the run's steps in its config file, replacing the file whole (a run starting meanwhile reads
// the old file or the new one, never a part).
inline void write_steps(const std::filesystem::path& config, long long steps) {
  const std::filesystem::path next = config.string() + ".next";
  std::ofstream(next) << "steps = " << steps << "\n";
  std::filesystem::rename(next, config);
}

// The job's output so far, the daemons' logs after it.
inline std::string job_output(const SlurmCluster& cluster, const SlurmRequeueJob& job) {
  return read_job_file(job.output) + "\n" + cluster.logs();
}

// The progress line's start for `step` ("step    20/").
inline std::string step_prefix(long long step) {
  char text[32];
  std::snprintf(text, sizeof text, "step %5lld/", step);
  return text;
}

inline void check_save_requeue_resume(SlurmCluster& cluster, const SlurmRequeueJob& spec) {
  const auto read_file = read_job_file;
  const std::string signal_line = step_prefix(kSignalAtStep);
  write_steps(spec.config, spec.steps);
  const auto submitted = cluster.command(
      spec.environment + " TESSERA_BIN=" + spec.train_gpt + " TESSERA_CHECKPOINT_DIR=" + spec.run_dir.string() +
          " sbatch --parsable " + spec.sbatch_options + " --cpus-per-task=1 --time=10 --chdir=" + spec.dir.string() +
          " --output=" + spec.output.string() + " " + spec.script + " " + spec.args,
      30);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output << cluster.logs();
  const std::string job = submitted.output.substr(0, submitted.output.find_first_of(";\n"));

  // Rank discovery and training progress.
  const bool training = SlurmCluster::wait_for(
      [&] {
        if (read_file(spec.output).find(signal_line) != std::string::npos) return true;
        const std::string state = cluster.job_field(job, "JobState");
        return state != "RUNNING" && state != "PENDING";
      },
      120);
  std::string out = read_file(spec.output);
  ASSERT_TRUE(training && out.find(signal_line) != std::string::npos)
      << "job " << job << " did not reach step " << kSignalAtStep << " (state " << cluster.job_field(job, "JobState")
      << "):\n"
      << job_output(cluster, spec);
  for (const std::string& part : spec.expected) {
    EXPECT_NE(out.find(part), std::string::npos) << "expected \"" << part << "\" in\n" << out;
  }

  // A preemption: SIGUSR1 to the batch shell only.
  const auto signalled = cluster.command("scancel --signal=USR1 --batch " + job, 20);
  ASSERT_EQ(signalled.exit_code, 0) << signalled.output;
  const std::regex saved_line("stop signal: saved step ([0-9]+) to " + spec.run_dir.string() + ", stopping");
  std::smatch saved;
  const bool stopped = SlurmCluster::wait_for(
      [&] {
        out = read_file(spec.output);
        if (std::regex_search(out, saved, saved_line)) return true;
        const std::string state = cluster.job_field(job, "JobState");
        return !state.empty() && state != "RUNNING";  // ended, or requeued without the line
      },
      60);
  ASSERT_TRUE(stopped && std::regex_search(out, saved, saved_line))
      << "job " << job << " did not save (state " << cluster.job_field(job, "JobState") << "):\n"
      << job_output(cluster, spec);
  const long long step = std::stoll(saved[1]);
  // The ranks print this line before they exit, the script requeues the job after that, and the
  // requeued job starts cred_expire + 1 s later: it reads these steps.
  const long long end = step + kStepsAfterResume;
  write_steps(spec.config, end);
  const bool requeued = SlurmCluster::wait_for(
      [&] {
        return cluster.job_field(job, "Restarts") == "1" || cluster.job_field(job, "JobState") == "COMPLETED" ||
               cluster.job_field(job, "JobState") == "FAILED";
      },
      60);
  ASSERT_TRUE(requeued && cluster.job_field(job, "Restarts") == "1")
      << "job " << job << " was not requeued (state " << cluster.job_field(job, "JobState") << "):\n"
      << job_output(cluster, spec);
  out = read_file(spec.output);
  EXPECT_GE(step, kSignalAtStep) << out;
  EXPECT_LT(step, spec.steps) << "the run had finished before the signal came; nothing was tested:\n" << out;
  EXPECT_NE(out.find("tessera: SIGUSR1 at "), std::string::npos) << out;
  EXPECT_NE(out.find("tessera: requeueing job " + job), std::string::npos) << out;
  char name[32];
  std::snprintf(name, sizeof name, "step_%07lld", step);
  EXPECT_TRUE(std::filesystem::exists(spec.run_dir / name)) << spec.run_dir / name << " is missing:\n" << out;

  // The requeued job starts again once its credential has expired (cred_expire + 1 s).
  const bool finished = SlurmCluster::wait_for(
      [&] {
        const std::string state = cluster.job_field(job, "JobState");
        return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" || state == "TIMEOUT";
      },
      240);
  out = read_file(spec.output);
  ASSERT_TRUE(finished && cluster.job_field(job, "JobState") == "COMPLETED")
      << "the requeued job " << job << " did not complete (state " << cluster.job_field(job, "JobState") << "):\n"
      << job_output(cluster, spec);
  EXPECT_NE(out.find("(requeued 1 times)"), std::string::npos) << out;
  const std::string resumed = "resumed from " + (spec.run_dir / name).string() + " at step " + std::to_string(step);
  const std::size_t resumed_at = out.find(resumed);
  ASSERT_NE(resumed_at, std::string::npos) << "expected \"" << resumed << "\" in\n" << out;
  // After the resume the steps go on from the saved one to the end the config file gives now.
  const std::string after = out.substr(resumed_at);
  std::smatch first;
  ASSERT_TRUE(std::regex_search(after, first, std::regex(R"(step +([0-9]+)/)" + std::to_string(end)))) << after;
  EXPECT_GT(std::stoll(first[1]), step) << after;
  EXPECT_TRUE(
      std::regex_search(after, std::regex("step +" + std::to_string(end) + "/" + std::to_string(end) + "  loss")))
      << after;
  EXPECT_EQ(after.find("stop signal"), std::string::npos) << after;
}

}  // namespace tessera::testing
