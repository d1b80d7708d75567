// check_launch over fixed environments: for each launcher (torchrun, an srun step, a Slurm batch
// script or salloc shell, PMI, PMIx, Open MPI's mpirun) the variables that say several processes
// were started stop a world of one MPI rank with a message that says what happened and how to
// launch; one process per launch, worlds of several ranks and TESSERA_ALLOW_SINGLETON=1 pass; a rank
// that is not below its launcher's size is refused on any world size.
#include "tessera/launch/launch_check.hpp"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {
namespace {

using Vars = std::map<std::string, std::string>;

// The message check_launch throws for `vars` with MPI reporting `world` ranks, or "" when it passes.
std::string refusal(const Vars& vars, int world = 1) {
  try {
    check_launch(fixed_environment(vars), world, "train_gpt");
    return "";
  } catch (const LaunchError& error) {
    return error.what();
  }
}

void expect_refused(const Vars& vars, const std::vector<std::string>& parts, int world = 1) {
  const std::string message = refusal(vars, world);
  ASSERT_FALSE(message.empty()) << "expected a LaunchError with a world of " << world;
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "expected \"" << part << "\" in:\n" << message;
  }
}

void expect_passes(const Vars& vars, int world = 1) { EXPECT_EQ(refusal(vars, world), "") << "world " << world; }

// What `sbatch -n 2` gives its batch script (Slurm 22.05).
Vars batch_script(int tasks) {
  return {{"SLURM_JOB_ID", "41"},
          {"SLURM_JOBID", "41"},
          {"SLURM_PROCID", "0"},
          {"SLURM_LOCALID", "0"},
          {"SLURM_NODEID", "0"},
          {"SLURM_NTASKS", std::to_string(tasks)},
          {"SLURM_NPROCS", std::to_string(tasks)},
          {"SLURM_JOB_NUM_NODES", "1"},
          {"SLURM_NNODES", "1"}};
}

// What task `rank` of `srun -n tasks` in that job sees.
Vars srun_task(int rank, int tasks) {
  Vars vars = batch_script(tasks);
  vars["SLURM_STEP_ID"] = "0";
  vars["SLURM_STEPID"] = "0";
  vars["SLURM_PROCID"] = std::to_string(rank);
  vars["SLURM_LOCALID"] = std::to_string(rank);
  vars["SLURM_STEP_NUM_TASKS"] = std::to_string(tasks);
  vars["SLURM_NTASKS"] = std::to_string(tasks);
  vars["SLURM_STEP_NUM_NODES"] = "1";
  return vars;
}

TEST(LaunchCheck, ALoneProcessOutsideAnyLauncherRuns) {
  expect_passes({});
  expect_passes({{"HOME", "/root"}, {"RANK", "captain"}, {"WORLD_SIZE", "big"}});  // not torchrun's
}

TEST(LaunchCheck, Torchrun) {
  expect_refused({{"RANK", "0"}, {"WORLD_SIZE", "2"}},
                 {"torchrun started this process as rank 0 of 2", "RANK=0 WORLD_SIZE=2",
                  "torchrun does not start MPI ranks", "overwrite each other's checkpoints", "mpirun -np 2 train_gpt",
                  "srun --mpi=pmix -n 2 train_gpt", "TESSERA_ALLOW_SINGLETON=1"});
  expect_refused({{"RANK", "3"},
                  {"WORLD_SIZE", "4"},
                  {"LOCAL_RANK", "1"},
                  {"LOCAL_WORLD_SIZE", "2"},
                  {"MASTER_ADDR", "node1"},
                  {"MASTER_PORT", "29500"}},
                 {"rank 3 of 4", "mpirun -np 4 train_gpt"});
  expect_passes({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_RANK", "0"}});
  expect_passes({{"RANK", "1"}, {"WORLD_SIZE", "2"}}, 2);  // MPI joined them: not this check's business
}

TEST(LaunchCheck, AnSrunStepOfSeveralTasks) {
  expect_refused(srun_task(0, 2),
                 {"srun started this process as rank 0 of 2 tasks", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_TASKS=2",
                  "did not connect its tasks through MPI", "srun --mpi=pmix train_gpt", "TESSERA_ALLOW_SINGLETON=1"});
  expect_refused(srun_task(1, 2), {"rank 1 of 2 tasks"});
  expect_passes(srun_task(0, 1));
  expect_passes(srun_task(1, 2), 2);
}

TEST(LaunchCheck, TheBatchScriptRanTheProgramDirectly) {
  expect_refused(batch_script(2), {"directly in the batch script (or salloc shell) of a Slurm job of 2 tasks",
                                   "SLURM_JOB_ID=41 SLURM_NTASKS=2", "no SLURM_STEP_ID", "srun --mpi=pmix train_gpt",
                                   "--ntasks=1", "TESSERA_ALLOW_SINGLETON=1"});
  expect_passes(batch_script(1));
  // salloc's shell: no SLURM_PROCID at all.
  expect_refused({{"SLURM_JOB_ID", "42"}, {"SLURM_NTASKS", "3"}, {"SLURM_NNODES", "1"}}, {"job of 3 tasks"});
  // No -n: one task per node, or what --ntasks-per-node asked for.
  expect_refused({{"SLURM_JOB_ID", "43"}, {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_TASKS_PER_NODE", "1(x2)"}},
                 {"job of 2 tasks"});
  expect_passes({{"SLURM_JOB_ID", "44"}, {"SLURM_JOB_NUM_NODES", "1"}, {"SLURM_TASKS_PER_NODE", "1"}});
}

TEST(LaunchCheck, AnMpiLauncherInsideTheJobDescribesTheProcess) {
  // `mpirun -np 1` in the batch script: mpirun started one process, the job's tasks are the script's business.
  Vars one = batch_script(2);
  one["OMPI_COMM_WORLD_RANK"] = "0";
  one["OMPI_COMM_WORLD_SIZE"] = "1";
  expect_passes(one);
  // A rank under a daemon that mpirun started as a 2-task srun step (one daemon per node).
  Vars daemon = srun_task(0, 2);
  daemon["OMPI_COMM_WORLD_RANK"] = "0";
  daemon["OMPI_COMM_WORLD_SIZE"] = "1";
  expect_passes(daemon);
  // `mpirun -np 4` in the batch script of a 2-task job: MPI joined the 4.
  Vars four = batch_script(2);
  four["OMPI_COMM_WORLD_RANK"] = "3";
  four["OMPI_COMM_WORLD_SIZE"] = "4";
  expect_passes(four, 4);
  // torchrun inside a one-task srun step still starts several processes.
  Vars nested = srun_task(0, 1);
  nested["RANK"] = "1";
  nested["WORLD_SIZE"] = "4";
  expect_refused(nested, {"torchrun started this process as rank 1 of 4"});
}

TEST(LaunchCheck, OpenMpiPmiAndPmix) {
  expect_refused({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
                 {"mpirun started this process as rank 1 of 2", "OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2",
                  "did not join mpirun's processes", "ldd train_gpt"});
  expect_refused({{"PMI_RANK", "0"}, {"PMI_SIZE", "4"}}, {"a PMI launcher started this process as rank 0 of 4",
                                                          "PMI_RANK=0 PMI_SIZE=4", "mpirun -np 4 train_gpt"});
  expect_refused({{"PMIX_RANK", "2"}}, {"a PMIx launcher started this process as rank 2 of at least 3", "PMIX_RANK=2"});
  expect_passes({{"PMIX_RANK", "0"}});  // an MPI singleton's own
  expect_passes({{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}});
}

TEST(LaunchCheck, TheEscapeHatch) {
  expect_passes({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TESSERA_ALLOW_SINGLETON", "1"}});
  Vars batch = batch_script(4);
  batch["TESSERA_ALLOW_SINGLETON"] = "yes";
  expect_passes(batch);
  expect_refused({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TESSERA_ALLOW_SINGLETON", "0"}}, {"torchrun"});
  try {
    check_launch(fixed_environment({{"TESSERA_ALLOW_SINGLETON", "maybe"}}), 1, "train_gpt");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("TESSERA_ALLOW_SINGLETON=\"maybe\""), std::string::npos) << error.what();
  }
}

TEST(LaunchCheck, ARankNotBelowItsSizeIsRefusedOnAnyWorld) {
  for (const int world : {1, 2, 8}) {
    expect_refused({{"RANK", "2"}, {"WORLD_SIZE", "2"}}, {"RANK=2 is not below WORLD_SIZE=2", "unset them"}, world);
    expect_refused({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "4"}},
                   {"OMPI_COMM_WORLD_RANK=5 is not below OMPI_COMM_WORLD_SIZE=4"}, world);
    expect_refused(srun_task(3, 2), {"SLURM_PROCID=3 is not below SLURM_STEP_NUM_TASKS=2"}, world);
    expect_refused({{"PMI_RANK", "0"}, {"PMI_SIZE", "0"}}, {"PMI_SIZE=0 is not a process count"}, world);
    expect_refused({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}},
                   {"LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"}, world);
  }
}

TEST(LaunchCheck, TheClaimsInOrder) {
  Vars vars = srun_task(0, 2);
  vars["PMIX_RANK"] = "0";
  const std::vector<LaunchClaim> claims = launch_claims(fixed_environment(vars));
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[0].source, ClaimSource::kSrunStep);
  EXPECT_EQ(claims[0].processes, 2);
  EXPECT_EQ(claims[0].rank, 0);
  EXPECT_EQ(claims[1].source, ClaimSource::kPmix);
  const std::vector<LaunchClaim> batch = launch_claims(fixed_environment(batch_script(2)));
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].source, ClaimSource::kSlurmAllocation);
  EXPECT_EQ(batch[0].processes, 2);
}

}  // namespace
}  // namespace tessera
