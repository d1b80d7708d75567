// train_gpt started without mpirun where the environment says it is one of several processes --
// torchrun's RANK=0 WORLD_SIZE=2, an srun step's SLURM_NTASKS=2 SLURM_PROCID=0 SLURM_STEP_ID=0, a
// batch script of a 2-task job -- exits non-zero before any work (no checkpoint directory is
// created) with a message that says what happened and how to launch; TESSERA_ALLOW_SINGLETON=1
// lets it run. Under mpirun with TESSERA_SHOW_RANKS=1 every rank prints where it runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::run_bounded;
using testing::tiny_run;

// Variables a surrounding launcher could have set for this test process itself, unset for the child.
const std::string kClean =
    "env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u PMI_RANK -u PMI_SIZE -u PMIX_RANK -u RANK -u WORLD_SIZE "
    "-u SLURM_JOB_ID -u SLURM_JOBID -u SLURM_STEP_ID -u SLURM_STEPID -u SLURM_NTASKS -u SLURM_PROCID "
    "-u SLURM_STEP_NUM_TASKS -u SLURM_TASKS_PER_NODE -u SLURM_JOB_NUM_NODES -u TESSERA_ALLOW_SINGLETON ";

class LaunchMismatch : public testing::TrainGptTest {
 protected:
  LaunchMismatch() : TrainGptTest("launch_mismatch", 5000, 40) {}
  // train_gpt for one step with `vars` set, saving into its own run directory.
  testing::ProcessResult run_with(const std::string& vars, const std::string& run_name) {
    return run_bounded(kClean + vars + " " + train_gpt_ + tiny_run(data_) + " --steps 1 --checkpoint-dir " +
                           (dir_ / run_name).string(),
                       60);
  }

  void expect_stopped(const std::string& vars, const std::string& run_name, const std::vector<std::string>& parts) {
    const auto r = run_with(vars, run_name);
    EXPECT_EQ(r.exit_code, 1) << vars << "\n" << r.output;
    for (const std::string& part : parts) {
      EXPECT_NE(r.output.find(part), std::string::npos) << vars << ": expected \"" << part << "\" in\n" << r.output;
    }
    EXPECT_EQ(r.output.find("step     1/1"), std::string::npos) << vars << ": it trained\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir_ / run_name)) << vars << ": the run directory was created";
  }
};

TEST_F(LaunchMismatch, TorchrunVariablesWithoutMpirun) {
  expect_stopped("RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2", "torchrun",
                 {"train_gpt: ", "torchrun started this process as rank 0 of 2 (RANK=0 WORLD_SIZE=2)",
                  "torchrun does not start MPI ranks", "mpirun -np 2 train_gpt", "TESSERA_ALLOW_SINGLETON=1"});
}

TEST_F(LaunchMismatch, AnSrunStepOfTwoTasksWithoutMpi) {
  expect_stopped("SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_NTASKS=2 SLURM_PROCID=0", "srun_step",
                 {"srun started this process as rank 0 of 2 tasks", "SLURM_STEP_ID=0", "srun --mpi=pmix train_gpt",
                  "TESSERA_ALLOW_SINGLETON=1"});
}

TEST_F(LaunchMismatch, TheBatchScriptOfATwoTaskJobRanItDirectly) {
  expect_stopped("SLURM_JOB_ID=77 SLURM_NTASKS=2 SLURM_PROCID=0", "batch",
                 {"directly in the batch script (or salloc shell) of a Slurm job of 2 tasks", "no SLURM_STEP_ID",
                  "srun --mpi=pmix train_gpt"});
}

TEST_F(LaunchMismatch, TheEscapeHatchRunsItAlone) {
  const auto r = run_with("RANK=0 WORLD_SIZE=2 TESSERA_ALLOW_SINGLETON=1", "allowed");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("step     1/1"), std::string::npos) << r.output;
}

TEST_F(LaunchMismatch, EveryRankShowsWhereItRuns) {
  const auto r = run_bounded(
      kClean + "TESSERA_SHOW_RANKS=1 mpirun --oversubscribe -np 2 " + train_gpt_ + tiny_run(data_) + " --steps 1", 90);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const std::string rank : {"rank 0/2 (host ", "rank 1/2 (host "}) {
    EXPECT_NE(r.output.find(rank), std::string::npos) << "expected \"" << rank << "\" in\n" << r.output;
  }
  EXPECT_NE(r.output.find("launched by mpirun"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tessera
