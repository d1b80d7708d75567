// read_launcher_env: the variables of mpirun, srun, PMIx and PMI launchers, their precedence, a
// batch script's Slurm values not taken for an srun launch, and a message naming the variable when a
// value is malformed.
#include "tessera/launch/launcher_env.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tessera {
namespace {

TEST(LauncherEnv, NothingSetMeansNoLauncher) {
  const LauncherEnv env = read_launcher_env(fixed_environment({}));
  EXPECT_EQ(env.launcher, Launcher::kNone);
  EXPECT_EQ(env.rank, -1);
  EXPECT_EQ(env.size, -1);
}

TEST(LauncherEnv, OpenMpi) {
  const LauncherEnv env = read_launcher_env(fixed_environment({{"OMPI_COMM_WORLD_RANK", "5"},
                                                               {"OMPI_COMM_WORLD_SIZE", "8"},
                                                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}));
  EXPECT_EQ(env.launcher, Launcher::kOpenMpi);
  EXPECT_STREQ(launcher_name(env.launcher), "mpirun");
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_size, 4);
  EXPECT_EQ(env.node_id, -1);
}

TEST(LauncherEnv, Slurm) {
  const LauncherEnv env = read_launcher_env(fixed_environment({{"SLURM_JOB_ID", "12"},
                                                               {"SLURM_STEP_ID", "0"},
                                                               {"SLURM_PROCID", "6"},
                                                               {"SLURM_NTASKS", "8"},
                                                               {"SLURM_LOCALID", "2"},
                                                               {"SLURM_NODEID", "1"},
                                                               {"SLURM_NNODES", "2"}}));
  EXPECT_EQ(env.launcher, Launcher::kSlurm);
  EXPECT_EQ(env.rank, 6);
  EXPECT_EQ(env.size, 8);
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.node_id, 1);
  EXPECT_EQ(env.num_nodes, 2);
}

TEST(LauncherEnv, SlurmStepValuesWinOverTheAllocation) {
  const LauncherEnv env = read_launcher_env(fixed_environment({{"SLURM_STEP_ID", "1"},
                                                               {"SLURM_PROCID", "0"},
                                                               {"SLURM_NTASKS", "16"},
                                                               {"SLURM_STEP_NUM_TASKS", "4"},
                                                               {"SLURM_NNODES", "4"},
                                                               {"SLURM_STEP_NUM_NODES", "1"}}));
  EXPECT_EQ(env.size, 4);
  EXPECT_EQ(env.num_nodes, 1);
}

TEST(LauncherEnv, TheBatchScriptIsNoSrunLaunch) {
  // What a batch script of `sbatch -n 2` sees (Slurm 22.05): the batch step's SLURM_PROCID=0 and the
  // job's SLURM_NTASKS, but no SLURM_STEP_ID. A program it runs directly was launched by nobody.
  const LauncherEnv env = read_launcher_env(fixed_environment({{"SLURM_JOB_ID", "12"},
                                                               {"SLURM_PROCID", "0"},
                                                               {"SLURM_NTASKS", "2"},
                                                               {"SLURM_LOCALID", "0"},
                                                               {"SLURM_NODEID", "0"}}));
  EXPECT_EQ(env.launcher, Launcher::kNone);
  EXPECT_EQ(env.rank, -1);
  // ... so an MPICH mpiexec in that script is described by its PMI variables.
  const LauncherEnv pmi = read_launcher_env(fixed_environment(
      {{"SLURM_JOB_ID", "12"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"PMI_RANK", "3"}, {"PMI_SIZE", "4"}}));
  EXPECT_EQ(pmi.launcher, Launcher::kPmi);
  EXPECT_EQ(pmi.rank, 3);
  EXPECT_EQ(pmi.size, 4);
}

TEST(LauncherEnv, MpirunInsideASlurmJobIsMpirun) {
  const LauncherEnv env = read_launcher_env(fixed_environment(
      {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  EXPECT_EQ(env.launcher, Launcher::kOpenMpi);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.size, 4);
}

TEST(LauncherEnv, PmixAndPmi) {
  const LauncherEnv pmix = read_launcher_env(fixed_environment({{"PMIX_RANK", "2"}}));
  EXPECT_EQ(pmix.launcher, Launcher::kPmix);
  EXPECT_EQ(pmix.rank, 2);
  EXPECT_EQ(pmix.size, -1);
  const LauncherEnv pmi = read_launcher_env(
      fixed_environment({{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}}));
  EXPECT_EQ(pmi.launcher, Launcher::kPmi);
  EXPECT_EQ(pmi.rank, 3);
  EXPECT_EQ(pmi.size, 4);
  EXPECT_EQ(pmi.local_rank, 1);
  EXPECT_EQ(pmi.local_size, 2);
}

TEST(LauncherEnv, MalformedValueNamesTheVariable) {
  try {
    read_launcher_env(fixed_environment({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "zero"}}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("SLURM_PROCID"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tessera
