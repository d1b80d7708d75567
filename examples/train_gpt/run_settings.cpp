// train_gpt's options as library settings, and the pre-flight memory check.
#include "run_settings.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

#include "flags/train_gpt_flags.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"
#include "tessera/comm/hierarchical/collective_topology.hpp"
#include "tessera/comm/hierarchical/hierarchical_communicator.hpp"
#include "tessera/comm/host_collectives.hpp"
#include "tessera/core/parse_number.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/core/wrapped_line.hpp"
#include "tessera/planning/plan_report.hpp"
#include "tessera/planning/preflight.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/sharding/shard_groups.hpp"

namespace tessera {

namespace {

// --hybrid-group: a number of ranks, or "node" (the ranks per node).
int hybrid_group_of(const std::string& text, const NodeLayout& nodes) {
  if (text == "node") return node_hybrid_group(nodes);
  const std::optional<std::int64_t> value = try_parse_integer(text, 0, std::numeric_limits<int>::max());
  if (!value) {
    throw SettingError("sharding.hybrid_group", text,
                       "must be a number of ranks (0: all ranks one group) or node (the ranks of one node)");
  }
  return static_cast<int>(*value);
}

}  // namespace

std::unique_ptr<Communicator> two_level_world(const std::string& collectives, Communicator& world,
                                              const NodeLayout& nodes) {
  const CollectiveTopology requested = parse_collective_topology(collectives);
  const bool possible = nodes.num_nodes() > 1 && nodes.ranks_per_node().value_or(1) > 1;
  if (requested == CollectiveTopology::kTwoLevel && !possible) {
    throw SettingError("comm.collectives", collectives,
                       "needs ranks on 2 or more nodes, 2 or more on each and as many on every node (this job: " +
                           nodes.describe() + "); use flat or auto");
  }
  if (requested == CollectiveTopology::kFlat || !possible) return nullptr;
  return std::make_unique<HierarchicalCommunicator>(world, nodes);
}

std::size_t collective_probe_bytes(Module& model) {
  const std::size_t bytes = static_cast<std::size_t>(model.parameter_count()) * sizeof(float);
  return std::clamp<std::size_t>(bytes, std::size_t{1} << 20, std::size_t{64} << 20);
}

std::string compute_dtype_line(const MixedPrecision& precision, const std::string& flag, const Device& device) {
  std::string line = std::string("compute: ") + dtype_name(precision.compute_dtype) + " (--compute-dtype " + flag;
  if (flag == "auto") line += device.kind() == DeviceKind::kCuda ? ": bf16 on a GPU" : ": f32 off a GPU";
  const bool all_f32 = precision.param_dtype == DType::kF32 && precision.compute_dtype == DType::kF32;
  return line + "); params stored " + dtype_name(precision.param_dtype) + (all_f32 ? "" : " (norms f32)") +
         ", f32 master";
}

ShardingConfig sharding_config(const TrainOptions& o, const NodeLayout& nodes, const Device& device) {
  ShardingConfig c;
  c.nodes = nodes;
  c.stage = parse_zero_stage(o.zero);
  c.precision.compute_dtype =
      o.compute_dtype == "auto" ? default_compute_dtype(device) : parse_dtype(o.compute_dtype, "--compute-dtype");
  c.precision.param_dtype =
      o.param_dtype == "auto" ? c.precision.compute_dtype : parse_dtype(o.param_dtype, "--param-dtype");
  c.precision.reduce_dtype = parse_dtype(o.reduce_dtype, "--reduce-dtype");
  c.hybrid_group = hybrid_group_of(o.hybrid_group, nodes);
  c.prefetch_units = o.prefetch;
  c.reshard_after_forward = o.reshard_after_forward;
  c.grad_clip = static_cast<float>(o.grad_clip);
  c.optimizer.adamw.beta1 = static_cast<float>(o.beta1);
  c.optimizer.adamw.beta2 = static_cast<float>(o.beta2);
  c.optimizer.adamw.weight_decay = static_cast<float>(o.weight_decay);
  c.optimizer.kind = parse_optimizer_kind(o.optimizer);
  c.optimizer.block_size = o.optimizer_block;
  c.offload.optimizer = parse_offload_target(o.offload_optimizer, "sharding.offload.optimizer");
  c.offload.parameters = parse_offload_target(o.offload_params, "sharding.offload.parameters");
  c.offload.nvme = o.nvme;
  c.offload.nvme.io = parse_offload_io(o.offload_io);
  return c;
}

PlanConfig plan_config_of(const GptConfig& gpt, const ShardingConfig& s, const BatchPlan& plan,
                          const RecomputePolicy& recompute) {
  PlanConfig c;
  c.model = ModelSpec{"train_gpt", gpt, 0};
  c.seq_len = plan.seq_len;
  c.precision = s.precision;
  c.optimizer = s.optimizer;
  c.stage = s.stage;
  c.ranks = plan.ranks;
  c.hybrid_group = s.hybrid_group;
  c.micro_batch = plan.micro;
  c.accumulation = plan.accumulation;
  c.recompute = recompute;
  c.offload = s.offload;
  c.prefetch_units = s.prefetch_units;
  c.reshard_after_forward = s.reshard_after_forward;
  return c;
}

namespace {

// `config` with the attention scratch of `device`'s kernels (the plan counts it as the run does).
PlanConfig planned_on(const PlanConfig& config, const Device& device) {
  PlanConfig planned = config;
  const Kernels& kernels = device.kernels();
  planned.attention_scratch = [&kernels](std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh, DType dtype) {
    return kernels.attention_scratch_bytes(b, t, c, nh, dtype);
  };
  return planned;
}

}  // namespace

std::string planned_peak_text(const PlanConfig& config, Device& device) {
  const MemoryPlan plan = plan_memory(planned_on(config, device));
  return "the memory planner predicted a peak of " + format_decimal_bytes(plan.needed()) +
         " per rank for this run's step (the pre-flight check compares it with the device's memory before step 1 "
         "unless --no-memory-check); give the run more device memory, or lower --micro-batch "
         "(tessera_plan --recommend says what fits)";
}

bool memory_fits(const PlanConfig& config, Device& device, int local_ranks, Communicator& world) {
  const bool host = device.memory_space() == MemorySpace::kHost;
  PreflightOptions options;
  options.sharers = local_ranks;
  options.host_memory = host;
  options.offload_to = host ? OffloadTarget::kNvme : OffloadTarget::kNone;
  const PreflightCheck check = preflight_memory_check(planned_on(config, device), device.memory_budget(), options);
  const std::vector<int> fits = all_gather_values(world, check.fits ? 1 : 0);
  const auto first_failing = std::find(fits.begin(), fits.end(), 0);
  if (first_failing == fits.end()) {
    if (world.rank() == 0) {
      std::printf("%s", wrapped_line("memory check:", {check.predicted_text(), check.available_text()}).c_str());
    }
    return true;
  }
  if (world.rank() == static_cast<int>(first_failing - fits.begin())) {
    std::fprintf(stderr, "rank %d: %s", world.rank(), check.report().c_str());
    if (check.recommendation && check.recommendation->fits) {
      std::fprintf(stderr, "try: %s (with your other options)\n",
                   train_gpt_command(check.recommendation->config).c_str());
    }
    std::fflush(stderr);
  }
  return false;
}

CheckpointOptions checkpoint_options(const TrainOptions& o) {
  CheckpointOptions c;
  c.dir = o.checkpoint_dir;
  c.save_every = o.save_every;
  c.keep_last = o.keep_last;
  c.mode = o.async_checkpoint ? SaveMode::kAsync : SaveMode::kSync;
  c.compression = parse_checkpoint_compression(o.checkpoint_compression);
  c.resume = o.resume;
  c.init_from = o.init_from;
  c.existing = o.overwrite ? ExistingCheckpoints::kOverwrite : ExistingCheckpoints::kRefuse;
  return c;
}

TrainingRunOptions training_run_options(const TrainOptions& o, const BatchPlan& plan) {
  TrainingRunOptions r;
  r.steps = o.steps;
  r.batch = plan;
  r.schedule = LrSchedule{static_cast<float>(o.lr), o.warmup, o.steps, static_cast<float>(o.min_lr_ratio)};
  r.seed = o.seed;
  r.checkpoint = checkpoint_options(o);
  r.max_skipped_steps = o.max_skipped_steps;
  r.check_replicas = o.check_replicas;
  if (o.spike_guard) {
    SpikeConfig spike;
    spike.window = o.spike_window;
    spike.warmup = std::min(spike.warmup, spike.window);
    spike.z = o.spike_z;
    r.spike_guard = spike;
  }
  r.eval_every = o.eval_every;
  r.log_every = o.log_every;
  r.metrics_path = o.metrics;
  r.tensorboard_dir = o.tensorboard;
  r.memory_profile = o.memory_profile;
  r.program = "train_gpt";
  r.names = train_gpt_setting_names();
  return r;
}

ProgressStyle progress_style(const std::string& flag, const RankInfo& rank_info) {
  if (flag == "live") return ProgressStyle::kLive;
  if (flag == "plain") return ProgressStyle::kPlain;
  const bool mpirun = rank_info.launcher == Launcher::kOpenMpi || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  return mpirun ? ProgressStyle::kPlain : progress_style_of(1);
}

}  // namespace tessera
