// read_launcher_env: Open MPI, then an srun step, then PMIx, then PMI variables.
#include "tessera/launch/launcher_env.hpp"

#include "tessera/launch/slurm_env.hpp"

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
  if (const SlurmEnv slurm = read_slurm_env(env); slurm.place == SlurmPlace::kStep && slurm.task >= 0) {
    out.launcher = Launcher::kSlurm;
    out.rank = slurm.task;
    out.size = slurm.tasks;
    out.local_rank = slurm.local_task;
    out.node_id = slurm.node;
    out.num_nodes = slurm.nodes;
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
