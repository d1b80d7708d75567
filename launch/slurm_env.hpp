// SlurmEnv: where in a Slurm job this process runs, read from the variables Slurm sets. Slurm
// sets SLURM_PROCID and SLURM_NTASKS in two different places, and only one of them is an srun
// launch:
//   kAllocation  the batch script of an sbatch job (the "batch step", which runs the script once,
//                on the job's first node) or the shell of salloc. SLURM_JOB_ID is set, no
//                SLURM_STEP_ID. The batch script also sees SLURM_PROCID=0, SLURM_LOCALID=0 and
//                SLURM_NODEID=0, and SLURM_NTASKS / SLURM_TASKS_PER_NODE of the whole job: they
//                describe the allocation, not how many copies of this process run.
//   kStep        a task started by srun: SLURM_STEP_ID (older Slurm: SLURM_STEPID) holds the
//                step's number, SLURM_PROCID this task's rank among SLURM_STEP_NUM_TASKS tasks.
// Slurm's pseudo-steps (batch, extern, interactive: ids from 0xFFFFFFF0 up, as some versions
// export them) count as the allocation. Values measured with Slurm 22.05 (docs/LAUNCH.md).
#pragma once

#include <cstdint>
#include <string>

#include "tessera/launch/environment.hpp"

namespace tessera {

enum class SlurmPlace : std::uint8_t { kNone, kAllocation, kStep };

struct SlurmEnv {
  SlurmPlace place = SlurmPlace::kNone;
  std::string job_id;   // SLURM_JOB_ID (or SLURM_JOBID); "" outside Slurm
  std::string step_id;  // SLURM_STEP_ID (or SLURM_STEPID) in a step; "" otherwise
  // kStep: the step's tasks (SLURM_STEP_NUM_TASKS, else SLURM_NTASKS) and nodes (SLURM_STEP_NUM_NODES,
  // else SLURM_NNODES). kAllocation: the job's tasks (SLURM_NTASKS, else the sum of
  // SLURM_TASKS_PER_NODE) and nodes (SLURM_JOB_NUM_NODES, else SLURM_NNODES). -1 when not set.
  int tasks = -1;
  int nodes = -1;
  // kStep only (-1 otherwise): SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID.
  int task = -1;
  int local_task = -1;
  int node = -1;
};

// Throws std::invalid_argument naming the variable when a value it needs is malformed.
SlurmEnv read_slurm_env(const EnvLookup& env);

// Tasks in a SLURM_TASKS_PER_NODE value: "2(x3),1" is 2+2+2+1 = 7. Throws std::invalid_argument
// naming the variable for anything else.
int count_tasks_per_node(const std::string& value);

}  // namespace tessera
