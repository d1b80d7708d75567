// LauncherEnv: what the process launcher says about this rank, read from its environment variables
// before (or without) MPI:
//   mpirun (Open MPI)  OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
//   srun (Slurm)       SLURM_PROCID, SLURM_STEP_NUM_TASKS (or SLURM_NTASKS), SLURM_LOCALID, SLURM_NODEID,
//                      SLURM_STEP_NUM_NODES (or SLURM_NNODES) -- only in an srun step (SLURM_STEP_ID set,
//                      launch/slurm_env.hpp): a batch script's SLURM_PROCID=0 describes no launch
//   PMIx               PMIX_RANK
//   PMI (MPICH hydra, Intel MPI, srun --mpi=pmi2)  PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS
// The first launcher in that order whose rank variable is set wins: mpirun inside a Slurm job is
// described by OMPI_*, not by the step variables its daemons inherit. discover_rank_info
// (rank_info.hpp) cross-checks these values against MPI; check_launch (launch_check.hpp) stops a
// process that its launcher meant to be one of several ranks but MPI started alone.
#pragma once

#include <cstdint>

#include "tessera/launch/environment.hpp"

namespace tessera {

enum class Launcher : std::uint8_t { kNone, kOpenMpi, kSlurm, kPmix, kPmi };

const char* launcher_name(Launcher launcher);  // "none", "mpirun", "srun", "pmix", "pmi"

struct LauncherEnv {
  Launcher launcher = Launcher::kNone;
  int rank = -1;  // -1 wherever the launcher does not say
  int size = -1;
  int local_rank = -1;
  int local_size = -1;
  int node_id = -1;  // launcher's node index (Slurm), not necessarily dense
  int num_nodes = -1;
};

// Throws std::invalid_argument naming the variable when a value is not an integer.
LauncherEnv read_launcher_env(const EnvLookup& env);

}  // namespace tessera
