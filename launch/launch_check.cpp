// launch_claims and check_launch: what each launcher's variables say against MPI's world size.
#include "tessera/launch/launch_check.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

#include "tessera/launch/slurm_env.hpp"

namespace tessera {
namespace {

const char* const kAllowVariable = "TESSERA_ALLOW_SINGLETON";

std::string assignment(const std::string& name, int value) { return name + "=" + std::to_string(value); }

// Appends " NAME=value" (by appending, not `" " + string`: GCC 12 warns falsely about the latter).
void append_assignment(std::string& text, const std::string& name, int value) {
  text += ' ';
  text += assignment(name, value);
}

// RANK and WORLD_SIZE are generic names: values that are not integers are not torchrun's.
std::optional<int> lenient_int(const EnvLookup& env, const char* name) {
  const std::optional<std::string> text = env(name);
  if (!text || text->empty()) return std::nullopt;
  int value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, error] = std::from_chars(text->data(), end, value);
  if (error != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// A launcher's rank must lie in [0, size) when both are known.
void require_rank_below_size(const std::string& rank_name, int rank, const std::string& size_name, int size) {
  if (size >= 0 && size < 1) {
    throw LaunchError(assignment(size_name, size) +
                      " is not a process count; these variables do not come from "
                      "a launcher: unset them or launch again");
  }
  if (rank < 0 || (size >= 1 && rank >= size)) {
    throw LaunchError(assignment(rank_name, rank) +
                      (size >= 1 ? " is not below " + assignment(size_name, size) : " is negative") +
                      "; these variables do not describe one launch (left over from another job?): unset them "
                      "or launch again");
  }
}

bool allowed_alone(const EnvLookup& env) {
  return env_switch(env, kAllowVariable,
                    "let a process run alone although its launcher's variables say several "
                    "were started")
      .value_or(false);
}

bool says_several(const LaunchClaim& claim) { return claim.processes > 1 || claim.rank > 0; }

std::string started(const LaunchClaim& claim) {
  if (claim.processes > 1 && claim.rank >= 0) {
    return "started this process as rank " + std::to_string(claim.rank) + " of " + std::to_string(claim.processes);
  }
  if (claim.processes > 1) return "started " + std::to_string(claim.processes) + " processes";
  return "started this process as rank " + std::to_string(claim.rank) + " of at least " +
         std::to_string(claim.rank + 1);
}

std::string count_of(const LaunchClaim& claim) { return claim.processes > 1 ? std::to_string(claim.processes) : "N"; }

const std::string kEachAlone =
    ". Each of them would train alone and they would overwrite each other's checkpoints, so this process stops "
    "before doing any work. ";

std::string mismatch_message(const LaunchClaim& claim, const std::string& program) {
  const std::string n = count_of(claim);
  const std::string allow = " To run one process alone on purpose, set " + std::string(kAllowVariable) + "=1.";
  switch (claim.source) {
    case ClaimSource::kTorchrun:
      return "torchrun " + started(claim) + " (" + claim.evidence +
             "), but MPI reports a world of 1 rank: torchrun does "
             "not start MPI ranks" +
             kEachAlone + "Launch with mpirun instead: mpirun -np " + n + " " + program +
             " ... (under Slurm: srun --mpi=pmix -n " + n + " " + program + " ...)." + allow;
    case ClaimSource::kSrunStep:
      return "srun " + started(claim) + " tasks (" + claim.evidence +
             "), but MPI reports a world of 1 rank: srun did not "
             "connect its tasks through MPI" +
             kEachAlone + "Launch with srun --mpi=pmix " + program +
             " ... (`srun --mpi=list` shows this Slurm's plugins; Open MPI needs PMIx support), or with mpirun -np " +
             n + " " + program + " inside the job." + allow;
    case ClaimSource::kOpenMpi:
      return "mpirun " + started(claim) + " (" + claim.evidence +
             "), but MPI reports a world of 1 rank: the MPI library " + program +
             " runs with did not join mpirun's processes" + kEachAlone +
             "Run it with the mpirun of the "
             "MPI it was built with (compare `ldd " +
             program + " | grep libmpi` with `which mpirun`)." + allow;
    case ClaimSource::kPmi:
    case ClaimSource::kPmix:
      return "a " + std::string(claim.source == ClaimSource::kPmi ? "PMI" : "PMIx") + " launcher " + started(claim) +
             " (" + claim.evidence + "), but MPI reports a world of 1 rank: the MPI library " + program +
             " runs with "
             "did not join the launcher's processes" +
             kEachAlone + "Launch with the mpiexec of the MPI " + program + " was built with (Open MPI: mpirun -np " +
             n + " " + program + " ..., under Slurm: srun --mpi=pmix)." + allow;
    case ClaimSource::kSlurmAllocation:
      return "this process runs directly in the batch script (or salloc shell) of a Slurm job of " + n + " tasks (" +
             claim.evidence +
             ", no SLURM_STEP_ID: not a task started by srun), so it would train on one rank and "
             "leave the job's other tasks idle; it stops before doing any work. Start it through srun inside the "
             "job: srun --mpi=pmix " +
             program +
             " ... (examples/slurm/train_gpt_cpu.sbatch), or submit with "
             "--ntasks=1." +
             allow;
  }
  return "the launcher started several processes but MPI reports 1." + allow;
}

}  // namespace

std::vector<LaunchClaim> launch_claims(const EnvLookup& env) {
  std::vector<LaunchClaim> claims;
  if (const auto rank = env_int(env, "OMPI_COMM_WORLD_RANK")) {
    const int size = env_int(env, "OMPI_COMM_WORLD_SIZE").value_or(-1);
    require_rank_below_size("OMPI_COMM_WORLD_RANK", *rank, "OMPI_COMM_WORLD_SIZE", size);
    std::string evidence = assignment("OMPI_COMM_WORLD_RANK", *rank);
    if (size > 0) append_assignment(evidence, "OMPI_COMM_WORLD_SIZE", size);
    claims.push_back({ClaimSource::kOpenMpi, *rank, size, evidence});
  }
  if (const auto size = env_int(env, "PMI_SIZE")) {
    const int rank = env_int(env, "PMI_RANK").value_or(0);
    require_rank_below_size("PMI_RANK", rank, "PMI_SIZE", *size);
    std::string evidence = assignment("PMI_RANK", rank);
    append_assignment(evidence, "PMI_SIZE", *size);
    claims.push_back({ClaimSource::kPmi, rank, *size, evidence});
  }
  const auto torch_rank = lenient_int(env, "RANK");
  const auto torch_size = lenient_int(env, "WORLD_SIZE");
  if (torch_rank && torch_size) {
    require_rank_below_size("RANK", *torch_rank, "WORLD_SIZE", *torch_size);
    const auto local_rank = lenient_int(env, "LOCAL_RANK");
    const auto local_size = lenient_int(env, "LOCAL_WORLD_SIZE");
    if (local_rank && local_size) require_rank_below_size("LOCAL_RANK", *local_rank, "LOCAL_WORLD_SIZE", *local_size);
    std::string evidence = assignment("RANK", *torch_rank);
    append_assignment(evidence, "WORLD_SIZE", *torch_size);
    claims.push_back({ClaimSource::kTorchrun, *torch_rank, *torch_size, evidence});
  }
  const SlurmEnv slurm = read_slurm_env(env);
  if (slurm.place == SlurmPlace::kStep) {
    if (slurm.task >= 0) require_rank_below_size("SLURM_PROCID", slurm.task, "SLURM_STEP_NUM_TASKS", slurm.tasks);
    std::string evidence = "SLURM_STEP_ID=" + slurm.step_id;
    if (slurm.tasks >= 0) append_assignment(evidence, "SLURM_STEP_NUM_TASKS", slurm.tasks);
    if (slurm.task >= 0) append_assignment(evidence, "SLURM_PROCID", slurm.task);
    claims.push_back({ClaimSource::kSrunStep, slurm.task, slurm.tasks, evidence});
  }
  if (const auto rank = env_int(env, "PMIX_RANK")) {
    require_rank_below_size("PMIX_RANK", *rank, "", -1);
    claims.push_back({ClaimSource::kPmix, *rank, -1, assignment("PMIX_RANK", *rank)});
  }
  if (slurm.place == SlurmPlace::kAllocation) {
    // Without -n the job has one task per node unless --ntasks-per-node says more.
    const int tasks = slurm.tasks > 0 ? slurm.tasks : slurm.nodes;
    std::string evidence = "SLURM_JOB_ID=" + slurm.job_id;
    if (slurm.tasks > 0) append_assignment(evidence, "SLURM_NTASKS", slurm.tasks);
    if (slurm.nodes > 0) append_assignment(evidence, "SLURM_JOB_NUM_NODES", slurm.nodes);
    claims.push_back({ClaimSource::kSlurmAllocation, -1, tasks, evidence});
  }
  return claims;
}

void check_launch(const EnvLookup& env, int mpi_world_size, const std::string& program) {
  const std::vector<LaunchClaim> claims = launch_claims(env);  // validates every launcher's values
  if (mpi_world_size != 1 || allowed_alone(env)) return;
  const auto present = [&](ClaimSource source) {
    return std::any_of(claims.begin(), claims.end(), [&](const LaunchClaim& c) { return c.source == source; });
  };
  // mpirun and PMI launchers inside a Slurm job start their daemons as srun steps: then the step's
  // task count describes the daemons, not this process.
  const bool mpi_launcher = present(ClaimSource::kOpenMpi) || present(ClaimSource::kPmi);
  const bool launched = claims.size() > (present(ClaimSource::kSlurmAllocation) ? 1u : 0u);
  for (const LaunchClaim& claim : claims) {
    if (claim.source == ClaimSource::kSrunStep && mpi_launcher) continue;
    if (claim.source == ClaimSource::kSlurmAllocation && launched) continue;
    if (says_several(claim)) throw LaunchError(mismatch_message(claim, program));
  }
}

}  // namespace tessera
