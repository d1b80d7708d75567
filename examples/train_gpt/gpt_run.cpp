// run_gpt: sets up train_gpt's GPT run and hands the loop to TrainingRun.
#include "gpt_run.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "flags/device_flag.hpp"
#include "flags/program_environment.hpp"
#include "flags/program_path.hpp"
#include "flags/train_gpt_flags.hpp"
#include "flags/validation_file.hpp"
#include "run_settings.hpp"
#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/export/model_source.hpp"
#include "tessera/checkpointing/export/tokenizer_fields.hpp"
#include "tessera/comm/device_communicator.hpp"
#include "tessera/comm/hierarchical/collective_topology.hpp"
#include "tessera/comm/host_collectives.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/wrapped_line.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/modules/gpt_flops.hpp"
#include "tessera/model/modules/gpt_sampling.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/planning/ranks_on_node.hpp"
#include "tessera/run/run_batch_plan.hpp"
#include "tessera/run/training_run.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/runtime/device_error.hpp"
#include "tessera/runtime/gemm_ceiling.hpp"
#include "tessera/runtime/out_of_memory.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/sharding/tensor_parallel_mesh.hpp"
#include "tessera/text/data/data_format.hpp"
#include "tessera/text/data/sample_loader.hpp"
#include "tessera/text/data/token_dataset.hpp"
#include "tessera/text/data/token_id_check.hpp"
#include "tessera/text/tokenizer/printable_text.hpp"
#include "tessera/training/losses/token_cross_entropy.hpp"
#include "tessera/training/validation_loss.hpp"

namespace tessera {
namespace {

std::int64_t padded_vocab(std::int64_t vocab) { return (vocab + 63) / 64 * 64; }

// Global samples [first, first + count) of the token files as a micro-batch (count, seq_len) i32.
MicroBatch load_batch(Device& device, const SampleLoader& loader, std::int64_t first, std::int64_t count) {
  const std::int64_t t = loader.seq_len();
  std::vector<std::int32_t> inputs, targets;
  try {
    inputs.resize(static_cast<std::size_t>(count * t));
    targets.resize(inputs.size());
  } catch (const std::bad_alloc&) {
    throw OutOfMemoryError("train_gpt: out of host memory allocating the token batch (2 x micro-batch " +
                           std::to_string(count) + " x seq-len " + std::to_string(t) + " int32, " +
                           format_bytes(2 * count * t * 4) + "); use a smaller --micro-batch");
  }
  loader.batch(first, count, inputs.data(), targets.data());
  return {Tensor::from_host_i32(device, inputs, {count, t}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, targets, {count, t}, MemoryCategory::kWorkspace)};
}

// The text sample after training: every rank runs the forward (its units may be sharded); equal
// seeds draw equal tokens. Without vocabulary files (GPT-2 data) it starts at end-of-text and prints
// as ids.
// The fields of the model --init-from reads that its flags leave open: a longer position table
// (GPT-2's 1024 fine-tuned at --seq-len 128; fewer positions than the context are refused by the
// load, naming the field), and — for a source of the same architecture — the head's tying, the
// norm epsilon and, where their flags are at their defaults, kv heads, MLP size and rotary base.
// Sizes the flags give are left as given: the load refuses a mismatch naming the field.
void adopt_source_fields(GptConfig& config, const TrainOptions& o, const GptConfig& source) {
  config.max_seq_len = std::max(config.max_seq_len, source.max_seq_len);
  if (source.architecture != config.architecture) return;
  config.tied_head = source.tied_head;
  config.norm_eps = source.norm_eps;
  if (o.kv_heads == 0) config.kv_heads = source.kv_heads;
  if (o.ffn_dim == 0) config.ffn_dim = source.ffn_dim;
  static const TrainOptions defaults;
  if (o.rope_theta == defaults.rope_theta) config.rope_theta = source.rope_theta;
}

// `tp`: the tensor-parallel group the model is split over, or null.
void print_sample(ShardedEngine& engine, const GptConfig& config, const TensorParallel* tp, const TokenizerSpec& spec,
                  const Tokenizer* tokenizer, const TrainOptions& o, bool root) {
  Rng rng(o.seed);
  SamplingOptions sampling;
  sampling.new_tokens = o.sample_tokens;
  sampling.temperature = static_cast<float>(o.temperature);
  sampling.vocab_limit = spec.vocab_size;
  // The last position's logits, made whole across a tensor-parallel group (each rank holds a piece).
  const LastLogitsFunction logits_of = [&](Context& ctx, const Tensor& tokens) {
    const Tensor logits = engine.forward(ctx, tokens);
    const std::int64_t t = logits.dim(1), columns = logits.dim(2);
    const Tensor last = logits.view((t - 1) * columns, {columns});
    return tp ? tp->whole_vocabulary_row(ctx, last, config.vocab_size) : last.to_host_f32();
  };
  const std::vector<std::int32_t> prompt =
      tokenizer ? tokenizer->encode("The ")
                : std::vector<std::int32_t>{
                      static_cast<std::int32_t>(std::min<std::int64_t>(spec.vocab_size, config.vocab_size) - 1)};
  const auto tokens = sample_tokens(logits_of, config, engine.device(), prompt, sampling, rng);
  if (root && tokenizer) {
    std::printf("\nsample:\n---\nThe %s\n---\n", printable_text(tokenizer->decode(tokens)).c_str());
  } else if (root) {
    std::string ids;
    for (const std::int32_t t : tokens) ids += std::to_string(t) + " ";
    std::printf("\nsample (token ids; pass --tokenizer DIR with GPT-2's vocab.json and merges.txt to decode):\n%s\n",
                ids.c_str());
  }
  std::fflush(stdout);
}

// The default token file (data/corpus.bin, relative to the current directory) missing: rank 0 says
// where it looked and how to make it, once for the job; every rank returns true, so the job ends
// with an exit status instead of an abort.
bool default_data_missing(const TrainOptions& o, Communicator& world) {
  static const TrainOptions defaults;
  if (o.data != defaults.data) return false;
  const std::filesystem::path path = std::filesystem::absolute(o.data.front()).lexically_normal();
  const bool missing =
      broadcast_string(world, world.rank() == 0 && !std::filesystem::exists(path) ? "1" : "", 0) == "1";
  if (missing && world.rank() == 0) {
    std::fprintf(stderr,
                 "train_gpt: no token file at %s (the default --data %s, relative to the current directory); make it "
                 "with: %s --out %s, or pass --data PATH\n",
                 path.c_str(), o.data.front().c_str(), shell_word(sibling_program("tessera_prepare")).c_str(),
                 shell_word(path.string()).c_str());
    std::fflush(stderr);
  }
  return missing;
}

// The tensor-parallel flags, checked before anything is built.
void check_tensor_parallel_options(const TrainOptions& o, int world_size) {
  if (o.sequence_parallel != "on" && o.sequence_parallel != "off") {
    throw SettingError("parallel.sequence_parallel", o.sequence_parallel, "must be on or off");
  }
  if (o.tp < 1 || world_size % o.tp != 0) {
    throw SettingError("parallel.tp", std::to_string(o.tp),
                       "must divide the job's " + std::to_string(world_size) + " ranks into tensor-parallel groups");
  }
}

}  // namespace

int run_gpt(DistributedContext& dist, const TrainOptions& o) {
  Communicator& world = dist.world();
  const bool root = dist.rank() == 0;
  if (default_data_missing(o, world)) return 1;
  check_tensor_parallel_options(o, world.size());

  const int local_ranks = ranks_on_node(dist.rank_info());  // share the node's memory (pre-flight) and cores
  set_rank_threads(o.threads, dist);
  const std::unique_ptr<Device> device = open_device_on_every_rank(o.device, dist, "train_gpt");
  if (!device) return 2;
  const std::string effective_config = effective_config_text("train_gpt", o.settings);
  if (root && (o.print_config || o.verbose)) std::printf("%s", effective_config.c_str());
  if (root) std::printf("%s\n", device_line(o.device, *device).c_str());

  BatchRequest request;
  request.global = o.global_batch;
  request.micro = o.micro_batch;
  request.accumulation = o.grad_accum;
  request.data_parallel_ranks = world.size() / o.tp;  // the ranks of a tensor-parallel group read the same samples
  request.seq_len = o.seq_len;
  request.names = train_gpt_batch_names();
  request.global_tokens = o.global_batch_tokens;
  // A resume keeps the checkpoint's global batch (the accumulation follows the rank count) unless the
  // flags choose another one explicitly.
  const ResumedBatch batch =
      plan_run_batch(request, checkpoint_options(o), parse_batch_change(o.batch_change, "--batch-change"), world);
  const BatchPlan& plan = batch.plan;

  const DataFormat data_format = parse_data_format(o.data_format, "--data-format");
  const TokenDataset train_data = open_token_dataset(o.data, data_format);
  std::optional<TokenDataset> val_data;
  const std::string val_path = o.val_data.empty() ? default_validation_file(o.data.front()).value_or("") : o.val_data;
  if (!val_path.empty()) val_data.emplace(open_token_dataset({val_path}, data_format));
  const SampleLoader train_loader(train_data, o.seq_len, o.seed);
  std::optional<SampleLoader> val_loader;
  if (val_data) val_loader.emplace(*val_data, o.seq_len, o.seed, SampleOrder::kSequential);  // windows in file order
  // The same windows on any rank count: --micro-batch when given, not a micro-batch derived per rank count.
  const ValidationSet val_set{o.eval_batches, o.micro_batch.value_or(kDefaultMicroBatch)};

  // The data's tokenizer (or --tokenizer's); null when GPT-2 data comes without its vocabulary files.
  const TokenizerSpec tokenizer_spec = apply_tokenizer_flag(data_tokenizer(train_data, data_format), o.tokenizer);
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(tokenizer_spec);
  GptConfig config;
  config.architecture = parse_gpt_architecture(o.model);
  config.vocab_size = o.vocab > 0 ? o.vocab : padded_vocab(tokenizer_spec.vocab_size);
  config.max_seq_len = o.seq_len;
  config.layers = o.layers;
  config.heads = o.heads;
  config.channels = o.dim;
  config.kv_heads = o.kv_heads;
  config.ffn_dim = o.ffn_dim;
  config.rope_theta = static_cast<float>(o.rope_theta);
  config.tied_head = !config.is_llama();
  if (!o.init_from.empty()) adopt_source_fields(config, o, open_model_source(o.init_from).config);
  check_token_ids(train_data, config.vocab_size);  // before any kernel could index past the tables
  if (val_data) check_token_ids(*val_data, config.vocab_size);
  const RecomputePolicy recompute = parse_recompute_policy(o.activation_checkpointing);
  // Under tensor parallelism the engine shards over this rank's data-parallel group: its nodes.
  const ShardingConfig sharding =
      sharding_config(o, data_parallel_nodes(dist.rank_info().nodes, o.tp, dist.rank() % o.tp), *device);
  if (root) std::printf("%s\n", compute_dtype_line(sharding.precision, o.compute_dtype, *device).c_str());
  // The plan of a rank: with tensor parallelism, the group's rank 0 (it holds the largest pieces).
  const auto planned = [&] {
    PlanConfig c = plan_config_of(config, sharding, plan, recompute);
    c.tp = o.tp;
    c.sequence_parallel = o.sequence_parallel == "on";
    return c;
  };
  if (!o.no_memory_check && !memory_fits(planned(), *device, local_ranks, world)) return 3;
  // The engine's collectives work on the device's memory: NCCL or staged MPI on a GPU (--comm), the MPI
  // world on the CPU.
  const std::unique_ptr<Communicator> device_world =
      make_device_world(*device, world, dist.comm_options(), resolved_device_comm(o.device));
  if (root && device_world) std::printf("%s\n", device_world_line(o.device, device_world.get()).c_str());
  // Tensor parallelism: the mesh of tensor- and data-parallel groups, the model split over the first.
  TensorParallelMesh mesh;
  std::shared_ptr<TensorParallel> tensor_parallel;
  if (o.tp > 1) {
    mesh = make_tensor_parallel_mesh(device_world ? *device_world : world, o.tp, dist.rank_info().nodes,
                                     o.tp_across_nodes);
    tensor_parallel = std::make_shared<TensorParallel>(std::make_shared<CommTensorParallelGroup>(*mesh.tensor),
                                                       o.sequence_parallel == "on");
  }
  Gpt model(config, tensor_parallel);
  const std::vector<std::string> wrapped = apply_recompute(model, recompute);
  // The ranks the engine's collectives run over (the data-parallel group under tensor parallelism),
  // flat or two-level (inside each node, then across).
  Communicator& flat_world = mesh.data ? *mesh.data : device_world ? *device_world : world;
  const std::unique_ptr<Communicator> two_level =
      device_world ? nullptr
                   : two_level_world(o.collectives, flat_world,
                                     data_parallel_nodes(dist.rank_info().nodes, o.tp, dist.rank() % o.tp));
  std::optional<TopologyChoice> topology;
  if (two_level) {
    topology = choose_collective_topology(parse_collective_topology(o.collectives), flat_world, *two_level,
                                          collective_probe_bytes(model));
    if (root) std::printf("collectives: %s (--collectives %s)\n", topology->describe().c_str(), o.collectives.c_str());
  }
  Communicator& engine_world = topology && topology->chosen == CollectiveTopology::kTwoLevel ? *two_level : flat_world;
  ShardedEngine engine(model, *device, engine_world, sharding, o.seed, mesh.tensor.get());
  if (const NvmeStore* store = engine.nvme_store()) {
    for (const std::string& notice : store->notices()) print_rank_notice(world.rank(), notice);
  }

  const GemmCeiling ceiling = measure_gemm_ceiling(*device, 1024, 1024, 1024, 0.2);
  TrainingRunOptions run = training_run_options(o, plan);
  run.batch_change = batch.global_changed ? BatchChange::kAllow : BatchChange::kKeep;
  run.flops_per_token = gpt_training_flops_per_token(config, o.seq_len);
  run.ceiling_gflops = ceiling.gflops;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  run.shared_cores = device->kind() == DeviceKind::kCpu && local_ranks * cpu_threads() > cores;
  add_gpt_config(run.run_config, config);
  add_tokenizer(run.run_config, tokenizer_spec);  // run.tokenizer_vocab: the rows an export keeps
  run.run_config.set_effective_config(effective_config);
  run.run_config.set_environment_report(environment_report_json(program_environment_report()));
  if (val_loader) {
    run.validation = [&](Trainer& trainer) { return validation_loss(trainer, *val_loader, val_set); };
  }
  run.progress = progress_style(o.progress, dist.rank_info());
  if (tensor_parallel) run.loss = std::make_shared<TokenCrossEntropy>(tensor_parallel, config.vocab_size);
  const bool run_shared_cores = run.shared_cores;
  TrainingRun training(engine, world, std::move(run), [&](std::int64_t first, std::int64_t count) {
    return load_batch(*device, train_loader, first, count);
  });

  if (root) {
    // Every line within kConsoleLineWidth characters: wider ones wrap between their parts.
    const auto print = [](const std::string& label, const std::vector<std::string>& parts, char separator = ',') {
      std::printf("%s", wrapped_line(label, parts, kConsoleLineWidth, separator).c_str());
    };
    print("train_gpt:",
          // The whole model's count (a tensor-parallel rank holds its pieces of it).
          {"GPT " + config.to_string() + ", " +
               std::to_string(tensor_parallel ? config.parameter_count() : model.parameter_count()) + " parameters",
           std::to_string(world.size()) + " rank(s) x " + device->name() + ", BLAS core " + blas_core_name()});
    if (const NodeLayout& nodes = dist.rank_info().nodes; nodes.num_nodes() > 1) {
      std::vector<std::string> node_parts;
      for (int n = 0; n < nodes.num_nodes(); ++n)
        node_parts.push_back(nodes.node_name(n) + ": ranks " + rank_list(nodes.ranks_of(n)));
      print("nodes: " + std::to_string(nodes.num_nodes()) + ";", node_parts, ';');
    }
    if (tensor_parallel) {
      std::printf("tensor parallel: %d ranks per group x %d data-parallel, sequence parallel %s\n", o.tp,
                  world.size() / o.tp, o.sequence_parallel.c_str());
    }
    print("sharding:",
          {engine.config().to_string(), "activation checkpointing: " + o.activation_checkpointing + " (" +
                                            std::to_string(wrapped.size()) + " modules)"},
          ';');
    if (const NvmeStore* store = engine.nvme_store()) {
      std::printf("offload: %s, %s per rank\n", store->describe().c_str(), format_bytes(store->file_bytes()).c_str());
    }
    std::vector<std::string> data_parts{train_data.describe() + " (" + std::to_string(train_data.num_tokens()) +
                                        " tokens, " + std::to_string(train_loader.windows_per_epoch()) +
                                        " windows of " + std::to_string(o.seq_len) + ")"};
    if (val_data) data_parts.push_back("validation: " + val_path);
    print("data:", data_parts);
    std::vector<std::string> tokenizer_parts{tokenizer_spec.describe()};
    if (data_format == DataFormat::kDetect && !train_data.tokenizer() && o.tokenizer.empty()) {
      tokenizer_parts.push_back("the data records no tokenizer: read as llm.c GPT-2 tokens");
      tokenizer_parts.push_back("for files of an older tessera_prepare pass --tokenizer bytes or re-run it");
    }
    print("tokenizer:", tokenizer_parts, ';');
    print("batch:", {plan.sequences_text(), plan.tokens_text()});
    if (!batch.line.empty()) {  // "resume: what the global batch did", wrapped between its comma-separated parts
      const std::size_t colon = batch.line.find(": ");
      std::vector<std::string> parts;
      std::string rest = batch.line.substr(colon + 2);
      for (std::size_t at; (at = rest.find(", ")) != std::string::npos; rest.erase(0, at + 2))
        parts.push_back(rest.substr(0, at));
      parts.push_back(rest);
      print(batch.line.substr(0, colon + 1), parts);
    }
    std::printf("GEMM ceiling: %.1f GFLOP/s per rank (f32 1024^3); MFU: training FLOP/s over ranks x it\n",
                ceiling.gflops);
    if (run_shared_cores) {
      std::printf("MFU n/a: %d rank(s) x %d thread(s) on %d cores share them, so no rank has the ceiling\n",
                  local_ranks, cpu_threads(), cores);
    }
    if (training.resumed_from()) {
      std::printf("resumed from %s at step %lld\n", training.resumed_from()->c_str(),
                  static_cast<long long>(training.progress().step));
    }
  }
  std::fflush(stdout);

  RunEnd end = RunEnd::kCompleted;
  try {
    end = training.run();
  } catch (const OutOfMemoryError& e) {  // the device filled up: say what the planner expected
    std::string what = e.what();
    if (!what.empty() && what.back() == '.') what.pop_back();
    throw OutOfMemoryError(what + "; " + planned_peak_text(planned(), *device));
  } catch (const DeviceError& e) {  // a copy or kernel failed: the device's state is lost, the checkpoints are not
    throw e.with_context(
        o.checkpoint_dir.empty()
            ? "the run stopped (it saves no checkpoints: --checkpoint-dir). Check the device, then start again"
            : "the run stopped and saved nothing from after it. Check the device (on a GPU: nvidia-smi, "
              "the kernel log's Xid lines), then continue from the last checkpoint in " +
                  o.checkpoint_dir + " with --resume auto");
  }
  switch (end) {
    case RunEnd::kDiverged: return 4;
    case RunEnd::kStopped: return 0;
    case RunEnd::kCompleted: break;
  }
  if (o.sample_tokens > 0) {
    print_sample(engine, config, tensor_parallel.get(), tokenizer_spec, tokenizer.get(), o, root);
  }
  training.stop_signal_since_run();
  return 0;
}

}  // namespace tessera
