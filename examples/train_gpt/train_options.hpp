// TrainOptions: every train_gpt option, parsed with Boost.Program_options from the command line and a
// --config file (flags/program_options.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flags/device_flag.hpp"
#include "flags/program_options.hpp"
#include "tessera/runtime/offload/nvme_settings.hpp"

namespace tessera {

struct TrainOptions {
  // data
  std::vector<std::string> data{"data/corpus.bin"};  // token files or glob patterns
  std::string val_data;                              // default: <data>_val.bin when it exists
  std::string data_format = "detect";                // detect | tessera | llmc | nanogpt
  std::string tokenizer;                             // "bytes" or a vocab.json + merges.txt directory; "": the data's
  // model
  std::string model = "gpt2";                                               // gpt2 | llama
  std::int64_t layers = 4, heads = 4, dim = 256, seq_len = 128, vocab = 0;  // vocab 0: tokenizer's, padded to 64
  std::int64_t kv_heads = 0, ffn_dim = 0;  // llama: 0 = heads / the default hidden size
  double rope_theta = 10000.0;             // llama
  // batch: global = micro x ranks x accumulation; unset values are derived (training/batch_plan.hpp)
  std::optional<std::int64_t> global_batch, micro_batch, grad_accum;
  std::optional<std::int64_t> global_batch_tokens;  // instead of global_batch: tokens per step
  std::string batch_change = "keep";                // keep | allow: may a resume change the global batch
  // training
  std::int64_t steps = 800, warmup = 20;
  double lr = 1e-3, min_lr_ratio = 0.1, weight_decay = 0.1, grad_clip = 1.0, beta1 = 0.9, beta2 = 0.95;
  std::uint64_t seed = 1337;
  int threads = 0;                                // 0: this node's cores divided by its ranks
  DeviceFlags device;                             // --device, --gemm-math
  std::string activation_checkpointing = "none";  // none | blocks | every:K | selective
  std::string optimizer = "adamw";                // adamw | adamw8bit
  std::int64_t optimizer_block = 2048;            // adamw8bit: elements per quantization block
  // sharding
  int zero = 0, prefetch = 1;
  std::string hybrid_group = "0";        // a number of ranks, or "node"
  int tp = 1;                            // ranks per tensor-parallel group (1: none)
  std::string sequence_parallel = "on";  // on | off (with --tp > 1)
  bool tp_across_nodes = false;          // allow tensor-parallel groups that span nodes
  std::string collectives = "flat";      // across nodes: flat, two-level or auto
  std::string compute_dtype = "auto";    // auto (bf16 on a GPU, f32 on the CPU) | f32 | bf16
  std::string param_dtype = "auto";      // auto (the compute dtype) | f32 | bf16 | f16
  std::string reduce_dtype = "f32";
  std::string offload_optimizer = "none", offload_params = "none";  // none | cpu | nvme
  NvmeSettings nvme;                // --offload-path, --offload-block, --offload-buffers, ...
  std::string offload_io = "auto";  // auto | buffered
  bool reshard_after_forward = true;
  // checkpoints (checkpointing/training_checkpointer.hpp)
  std::string checkpoint_dir, resume, init_from, checkpoint_compression = "none";
  std::int64_t save_every = 0;
  int keep_last = 0;
  bool async_checkpoint = false;
  bool overwrite = false;                // a fresh run may delete the checkpoints already in --checkpoint-dir
  bool allow_no_checkpoint_dir = false;  // a long run without --checkpoint-dir (checkpoint_flags.hpp)
  // output
  std::int64_t log_every = 20, eval_every = 200, eval_batches = 4, sample_tokens = 300;
  std::string progress = "auto";  // auto | live | plain (training/progress_display.hpp)
  double temperature = 0.8;
  std::string memory_profile;    // directory for the per-rank memory timeline; empty: off
  bool no_memory_check = false;  // skip the pre-flight memory check
  bool print_config = false;     // --print-config / --verbose: print the effective configuration at start
  bool verbose = false;          // -v / --verbose: print more at start (the effective configuration)
  bool env = false;              // --env: print the environment report and exit
  std::string metrics;           // JSON-lines metrics file (training/metrics_log.hpp); empty: none
  std::string tensorboard;       // TensorBoard event files' directory (training/tensorboard_writer.hpp); empty: none
  // divergence (training/skipped_steps.hpp, training/spike_detector.hpp)
  std::int64_t max_skipped_steps = 20;  // consecutive skipped steps before the run gives up (0: never)
  bool spike_guard = false;             // skip steps whose loss or gradient norm is an outlier
  double spike_z = 6.0;                 // standard deviations above the window's mean that make a spike
  int spike_window = 100;               // accepted steps the mean and spread are taken over
  std::int64_t check_replicas = 0;      // compare the ranks' parameter replicas every this many steps (0: off)

  // Every option's final value and where it came from (default, config file and line, command
  // line): printed at start and stored in each checkpoint.
  std::vector<OptionSetting> settings;
};

// Parses argv and the --config file it names. Returns std::nullopt when --help was asked for (printed
// when `print_help`). Throws std::invalid_argument with a message naming the option (and for a
// value from the config file, the file and line) and what to change on bad input.
std::optional<TrainOptions> parse_train_options(int argc, char** argv, bool print_help = true);

}  // namespace tessera
