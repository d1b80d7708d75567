// tessera_plan: per-rank memory of a training run before it starts — parameters, gradients,
// optimizer state, peak activations, communication buffers and workspace against the device memory,
// computed from the architecture the way Tessera's modules and ShardedEngine allocate (planning/).
//
//   tessera_plan --model gpt2-124m --zero 3 --ranks 8 --micro-batch 4 --param-dtype bf16 --device-memory 24GB
//   tessera_plan --model llama-7b-shaped --ranks 64 --zero 3 --device-memory 80GB --global-batch 1024 --recommend --svg
//   plan.svg tessera_plan --params 7B --zero 3 --ranks 8          (model state only)
//
// Exit status: 0 when the plan fits (or no device memory was given), 2 when it does not, 1 on a
// bad option.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "flags/program_options.hpp"
#include "flags/program_path.hpp"
#include "flags/train_gpt_flags.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/planning/memory_plan.hpp"
#include "tessera/planning/plan_report.hpp"
#include "tessera/planning/plan_svg.hpp"
#include "tessera/planning/recommend.hpp"
#include "tessera/training/batch_plan.hpp"

namespace tessera {
namespace {

struct Options {
  PlanConfig config;
  std::optional<std::int64_t> global, micro, accumulation;
  std::optional<std::int64_t> global_tokens;  // --global-batch-tokens
  bool recommend = false, timeline = false, detail = false;
  std::string target = "gpu";
  std::int64_t max_micro = 1024;
  std::string svg;
  std::string data = "data/corpus.bin";  // --recommend: the token file of the printed command
};

std::optional<Options> parse(int argc, char** argv) {
  Options o;
  std::string model, params, compute_dtype = "auto", param_dtype = "auto", reduce_dtype = "f32", grad_dtype = "f32",
                             optimizer = "adamw";
  std::string checkpointing = "none", offload = "none", device_memory, host_memory, reserve = "0",
              sequence_parallel = "on";
  std::optional<std::int64_t> layers, heads, dim, vocab, seq_len;
  int zero = 0;
  po::options_description desc("Options");
  auto opt = desc.add_options();
  std::string presets;
  for (const std::string& name : model_preset_names()) presets += (presets.empty() ? "" : ", ") + name;
  opt("model", po::value(&model), ("preset: " + presets + " (the fields below override it)").c_str());
  opt("layers", po::value<std::int64_t>(), "transformer blocks L");
  opt("dim", po::value<std::int64_t>(), "channels C");
  opt("heads", po::value<std::int64_t>(), "attention heads NH");
  opt("vocab", po::value<std::int64_t>(), "vocabulary size V");
  opt("seq-len", po::value<std::int64_t>(), "sequence length T");
  opt("params", po::value(&params),
      "a raw parameter count instead of an architecture (7B, 124M, 1.5e9): "
      "model state only");
  opt("compute-dtype", value_with_default(&compute_dtype),
      "what the layers compute in (compute copies, activations, their gradients): f32, bf16 or auto (bf16 for "
      "--target gpu, f32 for cpu)");
  opt("param-dtype", value_with_default(&param_dtype), "stored parameters: f32, bf16, f16 or auto (the compute dtype)");
  opt("reduce-dtype", value_with_default(&reduce_dtype), "gradient collectives: f32, bf16, f16");
  opt("grad-dtype", value_with_default(&grad_dtype),
      "gradient accumulation (the engine uses f32; bf16/f16 is the ZeRO paper's what-if)");
  opt("optimizer", value_with_default(&optimizer),
      "adamw (f32 m, v: 8 bytes per parameter) or adamw8bit (8-bit m, v with a scale per block: about 2)");
  opt("optimizer-block", value_with_default(&o.config.optimizer.block_size),
      "adamw8bit: elements per quantization block, 256 or 2048");
  opt("zero", value_with_default(&zero), "ZeRO stage 0-3");
  opt("ranks", value_with_default(&o.config.ranks), "data-parallel ranks");
  opt("hybrid-group", value_with_default(&o.config.hybrid_group), "shard within groups of this many ranks");
  opt("tp", value_with_default(&o.config.tp),
      "tensor parallelism: ranks per group splitting each layer (the job has --ranks x --tp ranks); the plan is "
      "the group's rank 0, which holds the largest pieces");
  opt("sequence-parallel", value_with_default(&sequence_parallel),
      "with --tp > 1: on (norms and residual stream hold 1/tp of the token rows) or off");
  opt("prefetch", value_with_default(&o.config.prefetch_units), "stage 3: units gathered ahead");
  opt("keep-params-after-forward", po::bool_switch(), "stage 3: do not free gathered units after forward");
  opt("global-batch", po::value<std::int64_t>(), "target sequences per optimizer step, all ranks");
  opt("micro-batch", po::value<std::int64_t>(), "sequences per rank per forward/backward (default 1)");
  opt("grad-accum", po::value<std::int64_t>(), "micro-batches per optimizer step");
  opt("global-batch-tokens", po::value<std::int64_t>(),
      "target tokens per optimizer step, all ranks (instead of --global-batch: micro x ranks x accumulation x "
      "seq-len)");
  opt("activation-checkpointing", value_with_default(&checkpointing), "none, blocks, every:K or selective");
  opt("offload", value_with_default(&offload),
      "none, or optimizer[:cpu|:nvme] and/or params[:cpu|:nvme] (modelled; params needs --zero 3)");
  opt("device-memory", po::value(&device_memory), "memory per rank: 80GB, 24GiB, ...");
  opt("host-memory", po::value(&host_memory),
      "host memory per rank for offloaded state on a GPU (128GiB, ...): judged beside --device-memory");
  opt("reserve", value_with_default(&reserve), "memory per rank held back for the runtime");
  opt("recommend", po::bool_switch(&o.recommend),
      "choose precision, micro-batch, checkpointing, offload and "
      "accumulation that fit (needs --device-memory)");
  opt("max-micro-batch", value_with_default(&o.max_micro), "--recommend: largest micro-batch tried");
  opt("target", value_with_default(&o.target),
      "the device the run will use, gpu or cpu: on a gpu the host updates offloaded optimizer state through pinned "
      "copies; on the cpu host memory is the device's (--recommend offloads to cpu memory on a gpu, to nvme on the "
      "cpu)");
  opt("data", value_with_default(&o.data),
      "--recommend: the token file the printed train_gpt command trains on (printed as an absolute path)");
  opt("svg", po::value(&o.svg), "write a stacked bar chart of stages 0-3 (and the recommendation) to this file");
  opt("timeline", po::bool_switch(&o.timeline), "print the predicted phases of the step");
  opt("detail", po::bool_switch(&o.detail), "print the activations each unit keeps for backward");
  ProgramOptions program("tessera_plan",
                         "tessera_plan: per-rank memory of a training step, predicted from the architecture (GB = 10^9 "
                         "bytes)");
  program.add(desc);
  if (argc == 1) {
    std::cout << program.help();
    return std::nullopt;
  }
  if (!program.parse(argc, argv)) return std::nullopt;
  const po::variables_map& vm = program.values();
  auto get = [&](const char* name) -> std::optional<std::int64_t> {
    if (!vm.count(name)) return std::nullopt;
    return vm[name].as<std::int64_t>();
  };
  PlanConfig& c = o.config;
  if (c.ranks < 1) throw std::invalid_argument("--ranks " + std::to_string(c.ranks) + ": must be >= 1");
  const bool arch =
      vm.count("layers") || vm.count("dim") || vm.count("heads") || vm.count("vocab") || vm.count("seq-len");
  if (!params.empty()) {
    if (!model.empty() || arch)
      throw std::invalid_argument("--params replaces the architecture: drop --model/--layers/...");
    c.model = model_from_parameter_count(parse_count(params, "--params"));
  } else {
    c.model = model.empty() ? ModelSpec{"custom", GptConfig{}, 0} : model_preset(model);
    GptConfig& g = *c.model.gpt;
    if (auto v = get("layers")) g.layers = *v;
    if (auto v = get("dim")) g.channels = *v;
    if (auto v = get("heads")) g.heads = *v;
    if (auto v = get("vocab")) g.vocab_size = *v;
    if (auto v = get("seq-len")) g.max_seq_len = *v;
    if (arch && !model.empty()) c.model.name += " (modified)";
  }
  if (o.target != "gpu" && o.target != "cpu")
    throw std::invalid_argument("--target '" + o.target + "': use gpu or cpu");
  c.precision.compute_dtype = compute_dtype == "auto" ? (o.target == "gpu" ? DType::kBF16 : DType::kF32)
                                                      : parse_dtype(compute_dtype, "--compute-dtype");
  c.precision.param_dtype =
      param_dtype == "auto" ? c.precision.compute_dtype : parse_dtype(param_dtype, "--param-dtype");
  c.precision.reduce_dtype = parse_dtype(reduce_dtype, "--reduce-dtype");
  c.grad_dtype = parse_dtype(grad_dtype, "--grad-dtype");
  c.optimizer.kind = parse_optimizer_kind(optimizer);
  c.stage = parse_zero_stage(zero);
  if (sequence_parallel != "on" && sequence_parallel != "off") {
    throw std::invalid_argument("--sequence-parallel '" + sequence_parallel + "': use on or off");
  }
  c.sequence_parallel = sequence_parallel == "on";
  c.reshard_after_forward = !vm["keep-params-after-forward"].as<bool>();
  c.recompute = parse_recompute_policy(checkpointing);
  c.offload = parse_offload(offload);
  if (!device_memory.empty()) c.device_memory = parse_bytes(device_memory, "--device-memory");
  if (!host_memory.empty()) c.host_memory = parse_bytes(host_memory, "--host-memory");
  c.reserved = parse_bytes(reserve, "--reserve");
  o.global = get("global-batch");
  o.micro = get("micro-batch");
  o.accumulation = get("grad-accum");
  o.global_tokens = get("global-batch-tokens");
  return o;
}

std::vector<PlanBar> stage_bars(const PlanConfig& config) {
  std::vector<PlanBar> bars;
  for (int st = 0; st <= 3; ++st) {
    PlanConfig c = config;
    c.stage = parse_zero_stage(st);
    std::string label = "ZeRO-" + std::to_string(st);
    if (st < 3 && c.offload.parameters != OffloadTarget::kNone) {
      c.offload.parameters = OffloadTarget::kNone;  // parameter offload exists at stage 3 only
      label += "*";
    }
    bars.push_back({label, plan_memory(c)});
  }
  return bars;
}

std::string stage_table(const std::vector<PlanBar>& bars) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-22s", "peak per rank");
  out += line;
  for (const PlanBar& b : bars) {
    std::snprintf(line, sizeof line, " %12s", b.label.c_str());
    out += line;
  }
  out += "\n";
  auto row = [&](const char* name, auto value) {
    std::snprintf(line, sizeof line, "%-22s", name);
    out += line;
    for (const PlanBar& b : bars) {
      std::snprintf(line, sizeof line, " %12s", value(b.plan).c_str());
      out += line;
    }
    out += "\n";
  };
  const bool step = bars.front().plan.has_step;  // without an architecture: model state only
  for (MemoryCategory c : kAllMemoryCategories) {
    if (!step && c != MemoryCategory::kParameters && c != MemoryCategory::kGradients &&
        c != MemoryCategory::kOptimizerState) {
      continue;
    }
    row(memory_category_name(c), [c](const MemoryPlan& p) { return format_decimal_bytes(p.peak(c)); });
  }
  row(step ? "total (simultaneous)" : "model state",
      [](const MemoryPlan& p) { return format_decimal_bytes(p.peak_total()); });
  if (bars.front().plan.judged()) {
    row("fits", [](const MemoryPlan& p) { return std::string(p.fits() ? "yes" : "no"); });
  }
  return out;
}

// The batch values as tessera_plan's flags spell them.
const BatchNames kBatchFlags{"--global-batch", "--micro-batch", "--grad-accum", "--seq-len", "--global-batch-tokens"};

int run(Options& o) {
  PlanConfig& c = o.config;
  if (o.target != "gpu" && o.target != "cpu")
    throw std::invalid_argument("--target '" + o.target + "': use gpu or cpu");
  c.host_is_device = o.target == "cpu";
  if (o.recommend) {
    // On the CPU device host memory is the device's: offload relieves it only by going to NVMe.
    if (o.global_tokens) {  // the recommendation searches in sequences
      if (o.global) throw std::invalid_argument("give --global-batch or --global-batch-tokens, not both");
      o.global = sequences_in_tokens(*o.global_tokens, c.tokens_per_sample(), kBatchFlags);
    }
    RecommendRequest request{c, o.global, o.max_micro, kBatchFlags,
                             o.target == "cpu" ? OffloadTarget::kNvme : OffloadTarget::kCpu};
    const Recommendation r = recommend(request);
    std::printf("%s\n", r.describe().c_str());
    if (r.fits) {
      // train_gpt beside this program, the token file by its absolute path, and --device cpu for a CPU plan
      // (train_gpt's default, auto, takes a GPU where there is one): it runs as printed from any directory.
      const CommandInputs inputs{o.data, o.target == "cpu" ? "cpu" : ""};
      std::printf("command: %s\n", train_gpt_command(r.config, inputs).c_str());
      if (!std::filesystem::exists(o.data)) {
        std::printf("(%s does not exist yet: make it with %s --out %s)\n",
                    std::filesystem::absolute(o.data).lexically_normal().c_str(),
                    shell_word(sibling_program("tessera_prepare")).c_str(),
                    shell_word(std::filesystem::absolute(o.data).lexically_normal().string()).c_str());
      }
      std::printf("\n");
    }
    std::printf("%s\n", format_plan(r.plan).c_str());
    if (!o.svg.empty()) {
      // Stages 0-3 of the configuration as given (the starting point), then the recommendation.
      std::vector<PlanBar> bars = stage_bars(c);
      bars.push_back({"chosen", r.plan});
      write_plan_bar_chart_svg(
          o.svg, bars,
          c.model.describe() + ", " + std::to_string(c.ranks) + " ranks: stages 0-3 as given, and the recommendation");
      std::printf("wrote %s\n", o.svg.c_str());
    }
    return r.fits ? 0 : 2;
  }
  if (c.model.gpt || o.micro || o.accumulation || o.global || o.global_tokens) {
    // The batch planner derives what is missing (micro defaults to 1 here).
    BatchRequest b{o.global, o.micro, o.accumulation, c.ranks, c.tokens_per_sample(), 1, kBatchFlags};
    b.global_tokens = o.global_tokens;
    const BatchPlan plan = plan_batch(b);
    c.micro_batch = plan.micro;
    c.accumulation = plan.accumulation;
    std::printf("batch   %s\n", plan.describe().c_str());
  }
  const MemoryPlan plan = plan_memory(c);
  std::printf("%s\n", format_plan(plan).c_str());
  if (o.detail) std::printf("%s\n", format_activation_breakdown(plan).c_str());
  if (o.timeline && plan.has_step)
    std::printf("predicted phases of one step:\n%s\n", format_timeline(plan.timeline).c_str());
  const std::vector<PlanBar> bars = stage_bars(c);
  std::printf("%s", stage_table(bars).c_str());
  if (!o.svg.empty()) {
    write_plan_bar_chart_svg(o.svg, bars, c.model.describe() + ", " + std::to_string(c.ranks) + " ranks");
    std::printf("wrote %s\n", o.svg.c_str());
  }
  return plan.fits() ? 0 : 2;
}

}  // namespace
}  // namespace tessera

// How tessera_plan spells the library settings it exposes.
const tessera::SettingNames& plan_setting_names() {
  static const tessera::SettingNames names{{"sharding.stage", "--zero"},
                                           {"sharding.hybrid_group", "--hybrid-group"},
                                           {"parallel.tp", "--tp"},
                                           {"sharding.prefetch_units", "--prefetch"},
                                           {"sharding.offload.parameters", "--offload params"},
                                           {"precision.param_dtype", "--param-dtype"},
                                           {"precision.compute_dtype", "--compute-dtype"},
                                           {"precision.reduce_dtype", "--reduce-dtype"},
                                           {"optimizer.kind", "--optimizer"},
                                           {"optimizer.block_size", "--optimizer-block"},
                                           {"plan.grad_dtype", "--grad-dtype"},
                                           {"plan.parameters", "--params"},
                                           {"plan.ranks", "--ranks"},
                                           {"plan.offload", "--offload"},
                                           {"plan.device_memory", "--device-memory"},
                                           {"plan.reserved", "--reserve"},
                                           {"batch.micro", "--micro-batch"},
                                           {"batch.accumulation", "--grad-accum"},
                                           {"model.vocab_size", "--vocab"},
                                           {"model.seq_len", "--seq-len"},
                                           {"model.layers", "--layers"},
                                           {"model.heads", "--heads"},
                                           {"model.channels", "--dim"}};
  return names;
}

int main(int argc, char** argv) {
  try {
    return tessera::reword_setting_errors(plan_setting_names(), [&] {
      auto options = tessera::parse(argc, argv);
      if (!options) return 0;
      return tessera::run(*options);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_plan: %s\n", e.what());
    return 1;
  }
}
