// tessera_generate: continues a prompt with a trained GPT.
//
//   [mpirun -np N] tessera_generate SOURCE [--prompt TEXT] [--length N] [--temperature T] [--top-k K]
//                                          [--seed S] [--zero STAGE] [--tokenizer DIR|bytes] [--device auto]
//
// SOURCE is a checkpoint directory (step_NNNNNNN), a run directory (its latest checkpoint) or a
// file written by `tessera_ckpt export` (any format). The model's shape comes from the stored config; the
// weights load on any number of ranks at any ZeRO stage (a checkpoint reshards on load; an export
// is read by each rank for its own shard). Every rank runs the forward; rank 0 prints the prompt
// and its continuation on stdout, decoded with the run's tokenizer (recorded in the checkpoint by
// train_gpt; --tokenizer overrides it, and is needed for GPT-2 data, whose vocabulary files the
// user supplies). Progress goes to stderr. The same seed gives the same text on any number of
// ranks and at any ZeRO stage; --top-k 1 (or --temperature 0) is greedy.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flags/device_flag.hpp"
#include "flags/program_options.hpp"
#include "tessera/checkpointing/export/checkpoint_export.hpp"
#include "tessera/checkpointing/export/model_source.hpp"
#include "tessera/checkpointing/export/tokenizer_fields.hpp"
#include "tessera/checkpointing/format/health_mark.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/comm/device_communicator.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/core/warning.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/modules/gpt_sampling.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/text/tokenizer/printable_text.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"

namespace tessera {
namespace {

struct GenerateOptions {
  std::string source;
  std::string prompt = "The";
  std::int64_t length = 200;
  double temperature = 0.8;
  std::int64_t top_k = 0;
  std::uint64_t seed = 1337;
  int zero = 0;
  int threads = 0;
  std::string tokenizer;
  DeviceFlags device;  // --device, --gemm-math
};

std::optional<GenerateOptions> parse_options(int argc, char** argv, bool print_help) {
  GenerateOptions o;
  po::options_description visible("Options");
  // clang-format off
  visible.add_options()
      ("prompt", value_with_default(&o.prompt), "text to continue (empty: start at end-of-text)")
      ("length", value_with_default(&o.length), "tokens to generate")
      ("temperature", value_with_default(&o.temperature), "sampling temperature (0: greedy)")
      ("top-k", value_with_default(&o.top_k), "sample among the K most likely tokens (0: all; 1: greedy)")
      ("seed", value_with_default(&o.seed), "sampling seed")
      ("zero", value_with_default(&o.zero), "ZeRO stage the weights are held at (3: sharded)")
      ("threads", value_with_default(&o.threads), "CPU threads per process (0: cores / ranks)")
      ("tokenizer", po::value(&o.tokenizer),
       "bytes, a directory of GPT-2-format vocab.json and merges.txt, or a tokenizer.json (or its "
       "directory) (default: the run's tokenizer)");
  // clang-format on
  add_device_option(visible, &o.device);
  po::options_description hidden;
  hidden.add_options()("source", po::value(&o.source), "checkpoint or export");
  po::positional_options_description positional;
  positional.add("source", 1);
  ProgramOptions program(
      "tessera_generate",
      "tessera_generate SOURCE [options]: continue a prompt with a trained GPT\n"
      "SOURCE: a checkpoint directory, a run directory (its latest) or a `tessera_ckpt export` file");
  program.add(visible);
  program.add_hidden(hidden);
  program.set_positional(positional);
  if (!program.parse(argc, argv, print_help)) return std::nullopt;
  if (o.source.empty()) throw std::invalid_argument("name a checkpoint or export to generate from (see --help)");
  if (o.length < 0) throw std::invalid_argument("--length must be >= 0, got " + std::to_string(o.length));
  if (o.top_k < 0) throw std::invalid_argument("--top-k must be >= 0, got " + std::to_string(o.top_k));
  parse_zero_stage(o.zero);  // a wrong flag is named before anything is read
  if (!std::isfinite(o.temperature) || o.temperature < 0) {
    throw std::invalid_argument("--temperature " + option_value_text(o.temperature) +
                                ": must be a finite number >= 0 (0: greedy)");
  }
  return o;
}

// The run's tokenizer, or --tokenizer's. Checkpoints of builds that recorded none were byte runs
// when their vocabulary is the byte tokenizer's padded size.
TokenizerSpec run_tokenizer(const ModelSource& source, const GptConfig& gpt, const std::string& flag) {
  std::optional<TokenizerSpec> recorded = stored_tokenizer(source.stored);
  if (!recorded && flag.empty() && gpt.vocab_size > 320) {
    throw std::invalid_argument(
        "the checkpoint does not record its tokenizer; pass --tokenizer (bytes or a directory "
        "of vocab.json and merges.txt, or a tokenizer.json)");
  }
  return apply_tokenizer_flag(recorded.value_or(bytes_tokenizer_spec()), flag);
}

int generate(DistributedContext& dist) {
  const std::optional<GenerateOptions> parsed = parse_options(dist.argc(), dist.argv(), dist.rank() == 0);
  if (!parsed) return 0;
  const GenerateOptions& o = *parsed;
  Communicator& world = dist.world();
  const bool root = dist.rank() == 0;
  set_rank_threads(o.threads, dist);

  const std::unique_ptr<Device> device = open_device_on_every_rank(o.device, dist, "tessera_generate");
  if (!device) return 2;
  const ModelSource source = open_model_source(o.source);
  const GptConfig& gpt = source.config;
  if (root && !source.is_export) {
    if (const auto notice = unhealthy_checkpoint_notice(source.path)) warn(world.rank(), *notice);
  }
  const TokenizerSpec spec = run_tokenizer(source, gpt, o.tokenizer);
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(spec);
  if (!tokenizer) {
    throw std::invalid_argument("the run's tokenizer (" + spec.describe() +
                                ") needs its vocab.json and merges.txt: pass --tokenizer DIR");
  }
  if (tokenizer->vocab_size() > gpt.vocab_size) {
    throw std::invalid_argument("the tokenizer has " + std::to_string(tokenizer->vocab_size()) +
                                " tokens but the model only " + std::to_string(gpt.vocab_size) +
                                "; pass the tokenizer the model was trained with");
  }

  Gpt model(gpt);
  ShardingConfig sharding;
  sharding.stage = parse_zero_stage(o.zero);
  sharding.use = EngineUse::kInference;
  const std::unique_ptr<Communicator> device_world =
      make_device_world(*device, world, dist.comm_options(), resolved_device_comm(o.device));
  ShardedEngine engine(model, *device, device_world ? *device_world : world, sharding, o.seed);
  load_model_weights(engine, world, source);
  if (root) {
    std::fprintf(stderr, "tessera_generate: GPT %s from %s on %d rank(s), ZeRO %d; tokenizer %s; %s\n",
                 gpt.to_string().c_str(), source.path.c_str(), world.size(), o.zero, spec.describe().c_str(),
                 device_line(o.device, *device).c_str());
  }

  std::vector<std::int32_t> prompt = tokenizer->encode(o.prompt);
  if (prompt.empty()) prompt.push_back(tokenizer->end_of_text() >= 0 ? tokenizer->end_of_text() : 0);
  if (static_cast<std::int64_t>(prompt.size()) > gpt.max_seq_len && root) {
    warn(world.rank(), "--prompt: " + std::to_string(prompt.size()) + " tokens, longer than the model's context of " +
                           std::to_string(gpt.max_seq_len) + "; the model sees its last " +
                           std::to_string(gpt.max_seq_len) + " (the whole prompt is printed)");
  }
  SamplingOptions sampling;
  sampling.new_tokens = o.length;
  sampling.temperature = static_cast<float>(o.temperature);
  sampling.top_k = o.top_k;
  sampling.vocab_limit = tokenizer->vocab_size();
  Rng rng(o.seed);
  const auto logits_of = [&](Context& ctx, const Tensor& tokens) { return engine.forward(ctx, tokens); };
  const std::vector<std::int32_t> tokens = sample_tokens(logits_of, gpt, *device, prompt, sampling, rng);
  if (root) {
    std::printf("%s%s\n", printable_text(o.prompt).c_str(), printable_text(tokenizer->decode(tokens)).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  return tessera::run_distributed(argc, argv, [](tessera::DistributedContext& dist) {
    const tessera::SettingNames names{{"sharding.stage", "--zero"}};
    return tessera::reword_setting_errors(names, [&] { return tessera::generate(dist); });
  });
}
