// read_launcher_env: Open MPI, then Slurm, then PMIx, then PMI variables.
#include "launch/launcher_env.hpp"

namespace tessera {

const char* launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::kNone: return "none";
    case Launcher::kOpenMpi: return "mpirun";
    case Launcher::kSlurm: return "srun";
    case Launcher::kPmix: return "pmix";
    case Launcher::kPmi: return "pmi";
  }
  return "unknown";
}

namespace {

int or_unknown(const std::optional<int>& value) { return value.value_or(-1); }

}  // namespace

LauncherEnv read_launcher_env(const EnvLookup& env) {
  LauncherEnv out;
  if (const auto rank = env_int(env, "OMPI_COMM_WORLD_RANK")) {
    out.launcher = Launcher::kOpenMpi;
    out.rank = *rank;
    out.size = or_unknown(env_int(env, "OMPI_COMM_WORLD_SIZE"));
    out.local_rank = or_unknown(env_int(env, "OMPI_COMM_WORLD_LOCAL_RANK"));
    out.local_size = or_unknown(env_int(env, "OMPI_COMM_WORLD_LOCAL_SIZE"));
    return out;
  }
  if (const auto rank = env_int(env, "SLURM_PROCID")) {
    out.launcher = Launcher::kSlurm;
    out.rank = *rank;
    auto size = env_int(env, "SLURM_STEP_NUM_TASKS");
    if (!size) size = env_int(env, "SLURM_NTASKS");
    if (!size) size = env_int(env, "SLURM_NPROCS");
    out.size = or_unknown(size);
    out.local_rank = or_unknown(env_int(env, "SLURM_LOCALID"));
    out.node_id = or_unknown(env_int(env, "SLURM_NODEID"));
    auto nodes = env_int(env, "SLURM_STEP_NUM_NODES");
    if (!nodes) nodes = env_int(env, "SLURM_NNODES");
    out.num_nodes = or_unknown(nodes);
    return out;
  }
  if (const auto rank = env_int(env, "PMIX_RANK")) {
    out.launcher = Launcher::kPmix;
    out.rank = *rank;
    return out;
  }
  if (const auto rank = env_int(env, "PMI_RANK")) {
    out.launcher = Launcher::kPmi;
    out.rank = *rank;
    out.size = or_unknown(env_int(env, "PMI_SIZE"));
    out.local_rank = or_unknown(env_int(env, "MPI_LOCALRANKID"));
    out.local_size = or_unknown(env_int(env, "MPI_LOCALNRANKS"));
    return out;
  }
  return out;
}

}  // namespace tessera
