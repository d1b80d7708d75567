// read_slurm_env: the batch script or salloc shell (allocation) told apart from an srun task (step).
#include "tessera/launch/slurm_env.hpp"

#include <charconv>
#include <cstdint>
#include <optional>
#include <stdexcept>

namespace tessera {
namespace {

constexpr std::uint64_t kFirstPseudoStep = 0xFFFFFFF0ull;  // batch, extern, interactive, pending

std::optional<std::string> first_set(const EnvLookup& env, const char* name, const char* older_name) {
  if (auto value = env(name); value && !value->empty()) return value;
  if (auto value = env(older_name); value && !value->empty()) return value;
  return std::nullopt;
}

// A step id names an srun step when it is a number below Slurm's pseudo-step ids.
bool is_srun_step(const std::string& id) {
  std::uint64_t value = 0;
  const char* end = id.data() + id.size();
  const auto [ptr, error] = std::from_chars(id.data(), end, value);
  return error == std::errc() && ptr == end && value < kFirstPseudoStep;
}

int first_int(const EnvLookup& env, const char* name, const char* fallback) {
  if (const auto value = env_int(env, name)) return *value;
  return env_int(env, fallback).value_or(-1);
}

}  // namespace

int count_tasks_per_node(const std::string& value) {
  const auto malformed = [&] {
    return std::invalid_argument("environment variable SLURM_TASKS_PER_NODE=\"" + value +
                                 "\" is not a Slurm task list such as 2(x3),1; unset it or fix it");
  };
  long long total = 0;
  std::size_t pos = 0;
  while (pos < value.size()) {
    int tasks = 0;
    int repeat = 1;
    const char* begin = value.data() + pos;
    const char* end = value.data() + value.size();
    auto [ptr, error] = std::from_chars(begin, end, tasks);
    if (error != std::errc() || tasks < 0) throw malformed();
    if (ptr != end && *ptr == '(') {
      if (end - ptr < 3 || ptr[1] != 'x') throw malformed();
      auto [rptr, rerror] = std::from_chars(ptr + 2, end, repeat);
      if (rerror != std::errc() || repeat < 1 || rptr == end || *rptr != ')') throw malformed();
      ptr = rptr + 1;
    }
    total += static_cast<long long>(tasks) * repeat;
    if (total > 1'000'000'000) throw malformed();
    if (ptr == end) break;
    if (*ptr != ',' || ptr + 1 == end) throw malformed();
    pos = static_cast<std::size_t>(ptr + 1 - value.data());
  }
  if (value.empty()) throw malformed();
  return static_cast<int>(total);
}

SlurmEnv read_slurm_env(const EnvLookup& env) {
  SlurmEnv out;
  const std::optional<std::string> job = first_set(env, "SLURM_JOB_ID", "SLURM_JOBID");
  const std::optional<std::string> step = first_set(env, "SLURM_STEP_ID", "SLURM_STEPID");
  if (step && is_srun_step(*step)) {
    out.place = SlurmPlace::kStep;
    out.job_id = job.value_or("");
    out.step_id = *step;
    out.tasks = first_int(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS");
    out.nodes = first_int(env, "SLURM_STEP_NUM_NODES", "SLURM_NNODES");
    out.task = env_int(env, "SLURM_PROCID").value_or(-1);
    out.local_task = env_int(env, "SLURM_LOCALID").value_or(-1);
    out.node = env_int(env, "SLURM_NODEID").value_or(-1);
    return out;
  }
  if (!job) return out;
  out.place = SlurmPlace::kAllocation;
  out.job_id = *job;
  out.tasks = env_int(env, "SLURM_NTASKS").value_or(-1);
  if (out.tasks < 0) {
    if (const auto per_node = env("SLURM_TASKS_PER_NODE"); per_node && !per_node->empty()) {
      out.tasks = count_tasks_per_node(*per_node);
    }
  }
  out.nodes = first_int(env, "SLURM_JOB_NUM_NODES", "SLURM_NNODES");
  return out;
}

}  // namespace tessera
