// check_launch: before any work, is this process what its launcher meant it to be? When the
// environment says several processes were started as one job but MPI reports a world of one
// rank, every one of those processes would train alone and they would overwrite each other's
// checkpoints. run_distributed calls check_launch on every rank right after MPI starts and stops
// the program with its message.
//
// Who says "several" (launch_claims), and when it counts with MPI reporting 1 rank:
//   mpirun (Open MPI)    OMPI_COMM_WORLD_SIZE > 1
//   PMI (mpiexec, srun --mpi=pmi2)  PMI_SIZE > 1
//   torchrun             WORLD_SIZE > 1 (with RANK): torchrun never starts MPI ranks
//   srun                 an srun step (launch/slurm_env.hpp) of SLURM_STEP_NUM_TASKS > 1; ignored when
//                        mpirun or a PMI launcher describes the process (their daemons run as steps)
//   PMIx                 PMIX_RANK > 0 (PMIx exports no size)
//   the batch script or salloc shell of a Slurm job of several tasks (SLURM_NTASKS, or the nodes of
//                        SLURM_JOB_NUM_NODES): only when nothing above describes the process -- the
//                        script ran the program directly instead of through srun.
// A launcher whose own values contradict each other (a rank not below its size) is an error on any
// world size. With MPI reporting several ranks the launchers are not checked here:
// discover_rank_info (rank_info.hpp) trusts them only when they match MPI on every rank.
//
// TESSERA_ALLOW_SINGLETON=1 lets a process run alone on purpose although the environment says
// otherwise (docs/LAUNCH.md).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/launch/environment.hpp"

namespace tessera {

enum class ClaimSource { kOpenMpi, kPmi, kTorchrun, kSrunStep, kPmix, kSlurmAllocation };

// One launcher's statement of how many processes it started.
struct LaunchClaim {
  ClaimSource source = ClaimSource::kOpenMpi;
  int rank = -1;         // this process's rank by the launcher; -1 when it does not say
  int processes = -1;    // processes it started; -1 when it does not say
  std::string evidence;  // the variables that say so: "RANK=0 WORLD_SIZE=2"
};

// The claims of every launcher whose variables are set, in the order of the table above. Throws
// LaunchError when a launcher's rank is not below its size, std::invalid_argument naming the
// variable when a value is not an integer (torchrun's generic names are skipped instead).
std::vector<LaunchClaim> launch_claims(const EnvLookup& env);

class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws LaunchError saying what happened and how to launch (`program`: the command's name) when
// the environment says several processes were started but `mpi_world_size` is 1, unless
// TESSERA_ALLOW_SINGLETON allows it (std::invalid_argument when that value is not understood).
void check_launch(const EnvLookup& env, int mpi_world_size, const std::string& program);

}  // namespace tessera
