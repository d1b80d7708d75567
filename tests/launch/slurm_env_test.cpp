// read_slurm_env: the variables Slurm 22.05 sets in a batch script, an salloc shell and an srun step
// (copied from real jobs) place the process in the allocation or in a step; pseudo-step ids count as
// the allocation; SLURM_TASKS_PER_NODE lists are summed and malformed ones named.
#include "tessera/launch/slurm_env.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tessera {
namespace {

TEST(SlurmEnv, OutsideSlurm) {
  const SlurmEnv env = read_slurm_env(fixed_environment({{"HOME", "/root"}}));
  EXPECT_EQ(env.place, SlurmPlace::kNone);
  EXPECT_EQ(env.tasks, -1);
}

TEST(SlurmEnv, TheBatchScriptOfATwoTaskJob) {
  // `sbatch -n 2 --ntasks-per-node=2`: the batch step runs the script once.
  const SlurmEnv env = read_slurm_env(fixed_environment({{"SLURM_JOB_ID", "1"},
                                                         {"SLURM_JOBID", "1"},
                                                         {"SLURM_PROCID", "0"},
                                                         {"SLURM_LOCALID", "0"},
                                                         {"SLURM_NODEID", "0"},
                                                         {"SLURM_NTASKS", "2"},
                                                         {"SLURM_NPROCS", "2"},
                                                         {"SLURM_NTASKS_PER_NODE", "2"},
                                                         {"SLURM_TASKS_PER_NODE", "2"},
                                                         {"SLURM_JOB_NUM_NODES", "1"},
                                                         {"SLURM_NNODES", "1"}}));
  EXPECT_EQ(env.place, SlurmPlace::kAllocation);
  EXPECT_EQ(env.job_id, "1");
  EXPECT_EQ(env.tasks, 2);
  EXPECT_EQ(env.nodes, 1);
  EXPECT_EQ(env.task, -1) << "the batch step's SLURM_PROCID is no task rank";
}

TEST(SlurmEnv, TheSallocShellAndAJobWithoutNtasks) {
  const SlurmEnv salloc = read_slurm_env(
      fixed_environment({{"SLURM_JOB_ID", "2"}, {"SLURM_NTASKS", "2"}, {"SLURM_NPROCS", "2"}, {"SLURM_NNODES", "1"}}));
  EXPECT_EQ(salloc.place, SlurmPlace::kAllocation);
  EXPECT_EQ(salloc.tasks, 2);
  EXPECT_EQ(salloc.nodes, 1);
  // `sbatch -N 3 --ntasks-per-node=...` without -n: the tasks are only in SLURM_TASKS_PER_NODE.
  const SlurmEnv nodes = read_slurm_env(fixed_environment({{"SLURM_JOB_ID", "3"},
                                                           {"SLURM_PROCID", "0"},
                                                           {"SLURM_TASKS_PER_NODE", "4(x2),2"},
                                                           {"SLURM_JOB_NUM_NODES", "3"}}));
  EXPECT_EQ(nodes.place, SlurmPlace::kAllocation);
  EXPECT_EQ(nodes.tasks, 10);
  EXPECT_EQ(nodes.nodes, 3);
}

TEST(SlurmEnv, ATaskOfAnSrunStep) {
  // Task 1 of `srun -n 2` inside that job: the step's values, and the job's left as they were.
  const SlurmEnv env = read_slurm_env(fixed_environment({{"SLURM_JOB_ID", "1"},
                                                         {"SLURM_STEP_ID", "0"},
                                                         {"SLURM_STEPID", "0"},
                                                         {"SLURM_PROCID", "1"},
                                                         {"SLURM_LOCALID", "1"},
                                                         {"SLURM_NODEID", "0"},
                                                         {"SLURM_NTASKS", "2"},
                                                         {"SLURM_STEP_NUM_TASKS", "2"},
                                                         {"SLURM_STEP_NUM_NODES", "1"},
                                                         {"SLURM_NNODES", "1"},
                                                         {"SLURM_NTASKS_PER_NODE", "2"}}));
  EXPECT_EQ(env.place, SlurmPlace::kStep);
  EXPECT_EQ(env.step_id, "0");
  EXPECT_EQ(env.tasks, 2);
  EXPECT_EQ(env.nodes, 1);
  EXPECT_EQ(env.task, 1);
  EXPECT_EQ(env.local_task, 1);
  EXPECT_EQ(env.node, 0);
}

TEST(SlurmEnv, StepValuesWinAndOlderNamesAreRead) {
  // `srun -n 1` in a job of 2 tasks: srun sets SLURM_NTASKS=1 too, but SLURM_STEP_NUM_TASKS decides.
  const SlurmEnv one = read_slurm_env(fixed_environment({{"SLURM_JOBID", "5"},
                                                         {"SLURM_STEPID", "1"},
                                                         {"SLURM_PROCID", "0"},
                                                         {"SLURM_NTASKS", "2"},
                                                         {"SLURM_STEP_NUM_TASKS", "1"}}));
  EXPECT_EQ(one.place, SlurmPlace::kStep);
  EXPECT_EQ(one.job_id, "5");
  EXPECT_EQ(one.step_id, "1");
  EXPECT_EQ(one.tasks, 1);
  const SlurmEnv no_step_count =
      read_slurm_env(fixed_environment({{"SLURM_STEP_ID", "2"}, {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}}));
  EXPECT_EQ(no_step_count.tasks, 4);
}

TEST(SlurmEnv, PseudoStepsAreTheAllocation) {
  for (const std::string id : {"4294967291", "4294967292", "4294967290", "batch", "extern"}) {
    const SlurmEnv env = read_slurm_env(fixed_environment(
        {{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", id}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}}));
    EXPECT_EQ(env.place, SlurmPlace::kAllocation) << "SLURM_STEP_ID=" << id;
    EXPECT_EQ(env.tasks, 8) << "SLURM_STEP_ID=" << id;
  }
}

TEST(SlurmEnv, TasksPerNodeLists) {
  EXPECT_EQ(count_tasks_per_node("2"), 2);
  EXPECT_EQ(count_tasks_per_node("2(x3),1"), 7);
  EXPECT_EQ(count_tasks_per_node("1,1,4(x2)"), 10);
  for (const std::string bad : {"", "two", "2(3)", "2(x0)", "2(x3", "2,", ",2", "2(x3)1"}) {
    try {
      count_tasks_per_node(bad);
      ADD_FAILURE() << "\"" << bad << "\" was accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("SLURM_TASKS_PER_NODE=\"" + bad + "\""), std::string::npos)
          << error.what();
    }
  }
}

TEST(SlurmEnv, MalformedStepValuesNameTheVariable) {
  try {
    read_slurm_env(fixed_environment({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "two"}}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("SLURM_STEP_NUM_TASKS"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tessera
