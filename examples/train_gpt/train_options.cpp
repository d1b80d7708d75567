// train_gpt option parsing (command line and --config file) and validation.
#include "train_options.hpp"

#include <boost/program_options.hpp>
#include <cmath>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "checkpoint_flags.hpp"
#include "flags/device_flag.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"
#include "tessera/core/number_text.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/text/data/data_format.hpp"
#include "tessera/training/resumed_batch_plan.hpp"

namespace tessera {

namespace po = boost::program_options;

namespace {

void require_positive(std::int64_t value, const char* option) {
  if (value <= 0) {
    throw std::invalid_argument(std::string("--") + option + " must be positive, got " + std::to_string(value));
  }
}

[[noreturn]] void refuse(const char* option, double value, const std::string& what) {
  std::ostringstream text;
  text << "--" << option << " " << value << ": " << what;
  throw std::invalid_argument(text.str());
}

void require_finite(double value, const char* option) {
  if (!std::isfinite(value)) refuse(option, value, "must be a finite number");
}

// Values no run can train with, refused before anything is allocated.
void validate_training_numbers(const TrainOptions& o) {
  require_finite(o.lr, "lr");
  require_finite(o.min_lr_ratio, "min-lr-ratio");
  require_finite(o.weight_decay, "weight-decay");
  require_finite(o.grad_clip, "grad-clip");
  require_finite(o.temperature, "temperature");
  if (o.min_lr_ratio < 0 || o.min_lr_ratio > 1) refuse("min-lr-ratio", o.min_lr_ratio, "must be in [0, 1]");
  if (o.weight_decay < 0) refuse("weight-decay", o.weight_decay, "must be >= 0 (0: no decay)");
  if (o.grad_clip < 0) refuse("grad-clip", o.grad_clip, "must be >= 0 (0: no clipping)");
  if (!(o.beta1 >= 0 && o.beta1 < 1)) refuse("beta1", o.beta1, "must be in [0, 1), e.g. 0.9");
  if (!(o.beta2 >= 0 && o.beta2 < 1)) refuse("beta2", o.beta2, "must be in [0, 1), e.g. 0.95");
  if (o.temperature <= 0) refuse("temperature", o.temperature, "must be positive, e.g. 0.8");
  if (o.threads < 0) refuse("threads", o.threads, "must be >= 0 (0: this node's cores divided by its ranks)");
  if (o.eval_every < 0) refuse("eval-every", static_cast<double>(o.eval_every), "must be >= 0 (0: off)");
  if (o.eval_every > 0 && o.eval_batches <= 0) {
    refuse("eval-batches", static_cast<double>(o.eval_batches),
           "must be positive while validation is on; use --eval-every 0 to turn validation off");
  }
  if (o.sample_tokens < 0) refuse("sample-tokens", static_cast<double>(o.sample_tokens), "must be >= 0 (0: none)");
  if (o.save_every < 0) refuse("save-every", static_cast<double>(o.save_every), "must be >= 0 (0: only on signals)");
  if (o.keep_last < 0) refuse("keep-last", o.keep_last, "must be >= 0 (0: keep all)");
  if (o.max_skipped_steps < 0) {
    refuse("max-skipped-steps", static_cast<double>(o.max_skipped_steps), "must be >= 0 (0: never stop)");
  }
  if (!std::isfinite(o.spike_z) || o.spike_z <= 0) refuse("spike-z", o.spike_z, "must be a positive number, e.g. 6");
  if (o.spike_window < 2) refuse("spike-window", o.spike_window, "must be at least 2 steps, e.g. 100");
  if (o.check_replicas < 0) refuse("check-replicas", static_cast<double>(o.check_replicas), "must be >= 0 (0: off)");
  if (o.check_replicas > 0 && o.zero == 3) {
    refuse("check-replicas", static_cast<double>(o.check_replicas),
           "applies at --zero 0, 1 and 2, where every rank holds every parameter; at --zero 3 each rank holds only "
           "its shard, so there are no replicas to compare: drop --check-replicas");
  }
}

// The checks after parsing: values no run can use, refused with the flag that set them.
TrainOptions validate(TrainOptions o, const po::variables_map& vm) {
  if (vm.count("global-batch")) o.global_batch = vm["global-batch"].as<std::int64_t>();
  if (vm.count("micro-batch")) o.micro_batch = vm["micro-batch"].as<std::int64_t>();
  if (vm.count("grad-accum")) o.grad_accum = vm["grad-accum"].as<std::int64_t>();
  if (vm.count("global-batch-tokens")) o.global_batch_tokens = vm["global-batch-tokens"].as<std::int64_t>();
  parse_batch_change(o.batch_change, "--batch-change");  // refused here, before anything runs
  require_positive(o.layers, "layers");
  require_positive(o.heads, "heads");
  require_positive(o.dim, "dim");
  require_positive(o.seq_len, "seq-len");
  require_positive(o.steps, "steps");
  require_positive(o.log_every, "log-every");
  if (o.vocab < 0) throw std::invalid_argument("--vocab must be >= 0 (0 picks the tokenizer's)");
  if (o.lr <= 0) throw std::invalid_argument("--lr must be positive, got " + shortest_number_text(o.lr));
  if (o.warmup < 0) throw std::invalid_argument("--warmup must be >= 0");
  validate_training_numbers(o);
  check_checkpoint_flags(o);
  if (o.progress != "auto" && o.progress != "live" && o.progress != "plain") {
    throw std::invalid_argument("--progress " + o.progress + ": use auto, live or plain");
  }
  parse_checkpoint_compression(o.checkpoint_compression);
  parse_data_format(o.data_format, "--data-format");
  try {
    parse_recompute_policy(o.activation_checkpointing);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--activation-checkpointing: ") + e.what());
  }
  if (o.dim % o.heads != 0) {
    throw std::invalid_argument("--dim " + std::to_string(o.dim) + " is not divisible by --heads " +
                                std::to_string(o.heads) + "; pick a dim that is a multiple of heads");
  }
  if (o.model != "gpt2" && o.model != "llama") {
    throw std::invalid_argument("--model " + o.model + ": use gpt2 or llama");
  }
  if (o.model == "gpt2" && (!vm["kv-heads"].defaulted() || !vm["rope-theta"].defaulted())) {
    throw std::invalid_argument(std::string(vm["kv-heads"].defaulted() ? "--rope-theta" : "--kv-heads") +
                                " applies to --model llama; GPT-2 has learned positions and as many key/value heads "
                                "as heads");
  }
  // The model's own sizes (kv-heads dividing heads, an even head size for rotary attention, ...)
  // are GptConfig::validate's, refused through the flag names before anything is built.
  return o;
}

}  // namespace

std::optional<TrainOptions> parse_train_options(int argc, char** argv, bool print_help) {
  TrainOptions o;
  po::options_description data("Data");
  // clang-format off
  data.add_options()
      ("data", po::value(&o.data)->multitoken()->default_value(o.data, "data/corpus.bin"),
       "training token files or glob patterns (llm.c format; make one with tessera_prepare)")
      ("val-data", po::value(&o.val_data),
       "validation token file (default, when present: <name>_val.bin for <name>_train.bin, as llm.c names "
       "them, else <data>_val.bin)")
      ("data-format", value_with_default(&o.data_format),
       "detect (by the header: tessera_prepare's files record their tokenizer, others are llm.c GPT-2 shards), "
       "tessera, llmc, or nanogpt (headerless uint16 GPT-2 tokens)")
      ("tokenizer", po::value(&o.tokenizer),
       "decode samples with: bytes, a directory of GPT-2-format vocab.json and merges.txt (needed for GPT-2 "
       "data: llm.c and nanoGPT files do not ship them), or a tokenizer.json (or its directory)");
  // clang-format on
  po::options_description model("Model");
  // clang-format off
  model.add_options()
      ("model", value_with_default(&o.model),
       "gpt2 (LayerNorm, learned positions, GELU MLP, tied head) or llama (RMSNorm, rotary positions, SwiGLU "
       "MLP, grouped-query attention, untied head, no biases)")
      ("layers", value_with_default(&o.layers), "transformer blocks L")
      ("heads", value_with_default(&o.heads), "attention heads NH")
      ("dim", value_with_default(&o.dim), "channels C (divisible by heads)")
      ("kv-heads", value_with_default(&o.kv_heads),
       "llama: key/value heads (dividing --heads; fewer than --heads is grouped-query attention; 0: --heads)")
      ("ffn-dim", value_with_default(&o.ffn_dim),
       "MLP hidden size (0: gpt2 4 x dim; llama 8/3 x dim rounded up to a multiple of 256)")
      ("rope-theta", value_with_default(&o.rope_theta), "llama: rotary position base")
      ("seq-len", value_with_default(&o.seq_len), "sequence length T")
      ("vocab", value_with_default(&o.vocab),
       "vocabulary size V (0: the data's tokenizer's, padded to a multiple of 64)");
  // clang-format on
  po::options_description batch("Batch (global = micro x ranks x accumulation; give any two, or one)");
  // clang-format off
  batch.add_options()
      ("global-batch", po::value<std::int64_t>(), "sequences per optimizer step, over all ranks")
      ("micro-batch", po::value<std::int64_t>(), "sequences per forward/backward on one rank (default 8)")
      ("grad-accum", po::value<std::int64_t>(), "micro-batches accumulated per step")
      ("global-batch-tokens", po::value<std::int64_t>(),
       "tokens per optimizer step, over all ranks (instead of --global-batch: micro x ranks x accumulation x "
       "seq-len)")
      ("batch-change", value_with_default(&o.batch_change),
       "on --resume: keep (the checkpoint's global batch, with --micro-batch or the checkpoint's micro-batch and "
       "the accumulation derived for this rank count) or allow (the batch flags as given, even when they change "
       "the global batch); --global-batch or --global-batch-tokens always sets it");
  // clang-format on
  po::options_description sharding("Sharding and precision");
  // clang-format off
  sharding.add_options()
      ("zero", value_with_default(&o.zero),
       "ZeRO stage: 0 replicate (DDP), 1 shard optimizer state, 2 + gradients, 3 + parameters")
      ("hybrid-group", value_with_default(&o.hybrid_group),
       "shard within groups of this many ranks, replicate across groups (0: all ranks one group; node: the "
       "ranks of one node, under any --map-by)")
      ("tp", value_with_default(&o.tp),
       "tensor parallelism: ranks per group (consecutive ranks) that split every layer's matrices, attention "
       "heads and the vocabulary between them (Megatron-LM's layout); the remaining factor of the ranks is data "
       "parallel, sharded by --zero")
      ("sequence-parallel", value_with_default(&o.sequence_parallel),
       "with --tp > 1: on (the norms and residual stream hold 1/tp of the token rows, all-gather and "
       "reduce-scatter at the tensor-parallel layers) or off (all-reduce; every rank holds every row)")
      ("tp-across-nodes", po::bool_switch(&o.tp_across_nodes),
       "allow tensor-parallel groups whose ranks run on more than one node (refused by default)")
      ("collectives", value_with_default(&o.collectives),
       "across nodes: flat (every collective over all ranks at once, summing in rank order: the same bits on "
       "any placement), two-level (inside each node, then across nodes: fewer bytes over the node links, "
       "another summation order) or auto (the faster of the two, timed at start: which one, and so the bits, "
       "may change from run to run); one node is always flat")
      ("compute-dtype", value_with_default(&o.compute_dtype),
       "what the layers compute in: the parameters' compute copies, activations and their gradients, a "
       "micro-batch's weight gradients: f32, bf16 (f32 master weights, optimizer state, gradient accumulation "
       "and statistics either way) or auto (bf16 on a GPU, f32 on the CPU)")
      ("param-dtype", value_with_default(&o.param_dtype),
       "stored/gathered parameters: f32, bf16, f16 or auto (the compute dtype)")
      ("reduce-dtype", value_with_default(&o.reduce_dtype), "gradient collectives: f32, bf16, f16")
      ("prefetch", value_with_default(&o.prefetch), "ZeRO-3: parameter gathers issued ahead")
      ("offload-optimizer", value_with_default(&o.offload_optimizer),
       "where the f32 master and optimizer state live: none (the device), cpu (pinned host memory) or nvme "
       "(files under --offload-path, streamed through the step)")
      ("offload-params", value_with_default(&o.offload_params),
       "ZeRO-3: where the parameter shard lives: none, cpu or nvme")
      ("offload-path", po::value(&o.nvme.path), "nvme offload: directory of the offload files (one per rank)")
      ("offload-block", value_with_default(&o.nvme.block_elements),
       "nvme offload: elements streamed per block")
      ("offload-buffers", value_with_default(&o.nvme.buffers),
       "nvme offload: blocks in flight (reads, updates and writes overlap with 3 or more)")
      ("offload-queue-depth", value_with_default(&o.nvme.queue_depth),
       "nvme offload: io_uring queue entries")
      ("offload-io", value_with_default(&o.offload_io),
       "nvme offload: auto (io_uring with O_DIRECT where possible) or buffered (pread/pwrite)")
      ("reshard-after-forward", value_with_default(&o.reshard_after_forward),
       "ZeRO-3: free gathered parameters after each unit's forward (true|false)");
  // clang-format on
  po::options_description train("Training");
  // clang-format off
  train.add_options()
      ("steps", value_with_default(&o.steps), "optimizer steps")
      ("lr", value_with_default(&o.lr), "peak learning rate")
      ("warmup", value_with_default(&o.warmup), "linear warmup steps")
      ("min-lr-ratio", value_with_default(&o.min_lr_ratio), "cosine floor, as a fraction of --lr")
      ("weight-decay", value_with_default(&o.weight_decay), "AdamW decoupled weight decay")
      ("beta1", value_with_default(&o.beta1), "AdamW beta1")
      ("beta2", value_with_default(&o.beta2), "AdamW beta2")
      ("grad-clip", value_with_default(&o.grad_clip), "global gradient-norm clip (0: off)")
      ("optimizer", value_with_default(&o.optimizer),
       "adamw (f32 moments, 8 bytes per parameter) or adamw8bit (moments block-quantized to 8 bits, about 2)")
      ("optimizer-block", value_with_default(&o.optimizer_block),
       "adamw8bit: elements per quantization block, 256 or 2048")
      ("seed", value_with_default(&o.seed), "seed for initialisation, data order and sampling")
      ("threads", value_with_default(&o.threads),
       "CPU threads per process (0: this node's cores divided by its ranks)")
      ("activation-checkpointing", value_with_default(&o.activation_checkpointing),
       "recompute activations in backward to save memory: none, blocks (every transformer block), every:K "
       "(blocks 0, K, 2K, ...) or selective (only layernorm, GELU and softmax outputs)");
  // clang-format on
  add_device_option(train, &o.device);
  po::options_description checkpoints("Checkpoints (sharded HDF5, docs/CHECKPOINTS.md)");
  // clang-format off
  checkpoints.add_options()
      ("checkpoint-dir", po::value(&o.checkpoint_dir),
       ("run directory for step_NNNNNNN/ checkpoints and `latest`; needed by --save-every, --resume auto and runs "
        "of more than " + std::to_string(kLongRunSteps) + " steps (see --allow-no-checkpoint-dir)").c_str())
      ("save-every", value_with_default(&o.save_every),
       "save after every N steps (0: only on SIGTERM/SIGUSR1/Ctrl-C, which save at the next step and stop)")
      ("keep-last", value_with_default(&o.keep_last), "keep the newest K checkpoints (0: all)")
      ("async-checkpoint", po::bool_switch(&o.async_checkpoint),
       "copy the shards to host buffers and write them in the background while training goes on")
      ("checkpoint-compression", value_with_default(&o.checkpoint_compression),
       "none or deflate")
      ("resume", po::value(&o.resume),
       "continue from a checkpoint: a step_NNNNNNN directory, a run directory (its latest), or auto "
       "(--checkpoint-dir's latest when there is one); any rank count, ZeRO stage or hybrid group")
      ("init-from", po::value(&o.init_from), "start from weights exported by `tessera_ckpt export` (fine-tuning)")
      ("overwrite", po::bool_switch(&o.overwrite),
       "start a fresh run (no --resume) in a --checkpoint-dir that holds checkpoints, deleting them first")
      ("allow-no-checkpoint-dir", po::bool_switch(&o.allow_no_checkpoint_dir),
       ("run more than " + std::to_string(kLongRunSteps) + " steps without --checkpoint-dir (refused otherwise: a "
        "crash or a stop signal would lose the whole run)").c_str());
  // clang-format on
  po::options_description output("Output");
  // clang-format off
  output.add_options()
      ("log-every", value_with_default(&o.log_every), "steps between log lines")
      ("progress", value_with_default(&o.progress),
       "auto (a live line rewritten in place when stdout is a terminal, but not under mpirun, which gives every "
       "rank a pseudo-terminal even when its output goes to a file), live, or plain (one time-stamped line per "
       "logged step)")
      ("eval-every", value_with_default(&o.eval_every), "steps between validation losses (0: off)")
      ("eval-batches", value_with_default(&o.eval_batches),
       "micro-batches per validation: the first eval-batches x micro-batch (8 when not given) windows of the "
       "validation file, the same loss on any rank count")
      ("sample-tokens", value_with_default(&o.sample_tokens), "tokens sampled at the end (0: none)")
      ("temperature", value_with_default(&o.temperature), "sampling temperature")
      ("memory-profile", po::value(&o.memory_profile),
       "write each rank's memory by category at every phase of every step to DIR (CSV) with an SVG chart of "
       "the second step, and warn when memory grows between steps")
      ("print-config", po::bool_switch(&o.print_config),
       "print the effective configuration (every option, its value and where it came from, as an INI file "
       "--config reads back) before training; checkpoints and the --metrics file record it either way")
      ("verbose,v", po::bool_switch(&o.verbose), "print more at start: the effective configuration")
      ("env", po::bool_switch(&o.env),
       "print the environment report (versions, build options, CPU, GPUs: as tessera_env) and exit")
      ("no-memory-check", po::bool_switch(&o.no_memory_check),
       "start without the pre-flight check that the predicted peak memory fits")
      ("metrics", po::value(&o.metrics)->value_name("FILE"),
       "append one JSON object per logged step (and per validation) to FILE (docs/METRICS.md), and draw "
       "FILE.loss.svg and FILE.throughput.svg at the end of the run")
      ("tensorboard", po::value(&o.tensorboard)->value_name("DIR"),
       "write the metrics as TensorBoard event files to DIR (made if missing; a resumed run adds a file beside "
       "the first run's): watch with `tensorboard --logdir DIR`");
  // clang-format on
  po::options_description divergence("Divergence");
  // clang-format off
  divergence.add_options()
      ("max-skipped-steps", value_with_default(&o.max_skipped_steps),
       "stop with an error after this many consecutive skipped steps (non-finite gradients or spikes; 0: never)")
      ("spike-guard", po::bool_switch(&o.spike_guard),
       "skip, on every rank, a step whose loss or gradient norm is more than --spike-z standard deviations above "
       "the last --spike-window steps; after --max-skipped-steps in a row, reload the latest checkpoint of "
       "--checkpoint-dir past the bad batches (or stop)")
      ("spike-z", value_with_default(&o.spike_z), "spike guard: standard deviations that make a spike")
      ("spike-window", value_with_default(&o.spike_window),
       "spike guard: accepted steps the mean and spread are measured over")
      ("check-replicas", value_with_default(&o.check_replicas),
       "every N steps, compare a checksum of every rank's copy of the parameters (and of the f32 master at "
       "--zero 0) and stop the run naming the first tensor and the ranks that differ (--zero 0-2, where the "
       "parameters are replicated; 0: off)");
  // clang-format on
  ProgramOptions program("train_gpt", "train_gpt: train a GPT on a token file\nUsage: train_gpt [options]");
  for (const po::options_description* group :
       {&data, &model, &batch, &train, &sharding, &checkpoints, &output, &divergence}) {
    program.add(*group);
  }
  if (!program.parse(argc, argv, print_help)) return std::nullopt;
  o.settings = program.settings();
  return locate_config_errors(o.settings, [&] { return validate(o, program.values()); });
}

}  // namespace tessera
