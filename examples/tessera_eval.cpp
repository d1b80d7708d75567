// tessera_eval: the validation loss of a saved model on a token file, the same on any rank count,
// and its logits for a token sequence.
//
//   tessera_eval MODEL --data val.bin [--eval-batches 4] [--micro-batch 8] [--zero 0] [--device auto]
//   tessera_eval MODEL --tokens 72,101,108,108,111 --print-logits
//   mpirun -np 4 tessera_eval run/ --data data/corpus_val.bin
//
// MODEL: a checkpoint directory, a run directory (its latest checkpoint) or an export file
// (tessera_ckpt export: .h5, or .safetensors with its config.json). The validation set is the
// first eval-batches x micro-batch windows of seq-len + 1 tokens of the file, in file order
// (training/validation_loss.hpp): train_gpt's validation loss with the same options. An export with
// Hugging Face names has no padding rows, so its loss is over the real vocabulary only.
// --print-logits prints {"tokens": [...], "logits": [[...] per position]} as JSON on rank 0, one
// value per real token of the vocabulary (for comparing with another implementation).
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "flags/device_flag.hpp"
#include "flags/inference_checks.hpp"
#include "flags/program_options.hpp"
#include "tessera/checkpointing/export/model_source.hpp"
#include "tessera/checkpointing/export/tokenizer_fields.hpp"
#include "tessera/checkpointing/format/health_mark.hpp"
#include "tessera/comm/device_communicator.hpp"
#include "tessera/core/parse_number.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/core/warning.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/text/data/sample_loader.hpp"
#include "tessera/text/data/token_dataset.hpp"
#include "tessera/text/data/token_id_check.hpp"
#include "tessera/training/trainer.hpp"
#include "tessera/training/validation_loss.hpp"

namespace tessera {
namespace {

struct EvalOptions {
  std::string model, data, tokens;
  std::int64_t eval_batches = 4, micro_batch = 8, seq_len = 0;
  int zero = 0;
  bool print_logits = false;
  DeviceFlags device;  // --device, --gemm-math
};

std::optional<EvalOptions> parse_options(int argc, char** argv, bool print_help) {
  EvalOptions o;
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("data", po::value(&o.data), "validation token file (llm.c format, tessera_prepare)")
      ("eval-batches", value_with_default(&o.eval_batches), "micro-batches in the validation set")
      ("micro-batch", value_with_default(&o.micro_batch), "windows per micro-batch")
      ("seq-len", value_with_default(&o.seq_len), "tokens per window (0: the model's context)")
      ("zero", value_with_default(&o.zero), "ZeRO stage of the evaluating engine (0-3)")
      ("tokens", po::value(&o.tokens), "comma-separated token ids for --print-logits")
      ("print-logits", po::bool_switch(&o.print_logits), "print the logits of --tokens as JSON");
  // clang-format on
  add_device_option(options, &o.device);
  po::options_description hidden;
  hidden.add_options()("model", po::value(&o.model), "checkpoint, run directory or export");
  po::positional_options_description positional;
  positional.add("model", 1);
  ProgramOptions program("tessera_eval",
                         "tessera_eval: validation loss and logits of a checkpoint or export\n"
                         "Usage: tessera_eval MODEL [options]");
  program.add(options);
  program.add_hidden(hidden);
  program.set_positional(positional);
  if (!program.parse(argc, argv, print_help)) return std::nullopt;
  if (o.model.empty())
    throw std::invalid_argument("name the MODEL: a checkpoint directory, run directory or export file");
  if (o.data.empty() && !o.print_logits) throw std::invalid_argument("give --data (validation loss) or --print-logits");
  if (o.print_logits && o.tokens.empty())
    throw std::invalid_argument("--print-logits needs --tokens, e.g. --tokens 1,2,3");
  parse_zero_stage(o.zero);  // a wrong flag is named before anything is read
  if (o.seq_len < 0) {
    throw std::invalid_argument("--seq-len " + std::to_string(o.seq_len) + ": must be >= 0 (0: the model's context)");
  }
  return o;
}

std::vector<std::int32_t> parse_tokens(const std::string& text, std::int64_t vocab) {
  std::vector<std::int32_t> tokens;
  std::size_t at = 0;
  for (int item = 1;; ++item) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string what = "--tokens item " + std::to_string(item) + " (a token id of the model)";
    tokens.push_back(static_cast<std::int32_t>(parse_integer(std::string_view(text).substr(at, comma - at), what, 0,
                                                             vocab - 1)));
    if (comma == text.size()) break;
    at = comma + 1;
  }
  return tokens;
}

// {"tokens": [...], "logits": [[v, ...], ...]}: `columns` values per position, 9 significant digits.
void print_logits_json(const std::vector<std::int32_t>& tokens, const std::vector<float>& logits, std::int64_t vocab,
                       std::int64_t columns) {
  std::printf("{\"tokens\": [");
  for (std::size_t i = 0; i < tokens.size(); ++i) std::printf("%s%d", i ? ", " : "", tokens[i]);
  std::printf("],\n \"logits\": [");
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    std::printf("%s\n  [", t ? "," : "");
    for (std::int64_t v = 0; v < columns; ++v) {
      std::printf("%s%.9g", v ? ", " : "", logits[t * static_cast<std::size_t>(vocab) + static_cast<std::size_t>(v)]);
    }
    std::printf("]");
  }
  std::printf("]}\n");
}

int evaluate(DistributedContext& dist) {
  const std::optional<EvalOptions> parsed = parse_options(dist.argc(), dist.argv(), dist.rank() == 0);
  if (!parsed) return 0;
  const EvalOptions& o = *parsed;
  Communicator& world = dist.world();
  const std::unique_ptr<Device> device = open_device_on_every_rank(o.device, dist, "tessera_eval");
  if (!device) return 2;
  const ModelSource source = open_model_source(o.model);
  const bool root = world.rank() == 0;
  // Everything the flags ask of the model, checked before the model is built.
  const std::int64_t seq_len = o.seq_len > 0 ? o.seq_len : source.config.max_seq_len;
  check_within_context(seq_len, source.config, "--seq-len");
  std::optional<TokenDataset> data;
  if (!o.data.empty()) {
    data.emplace(o.data);
    check_data_tokenizer(stored_tokenizer(source.stored), data->tokenizer(), o.data);
    check_token_ids(*data, source.config.vocab_size);
    check_forward_fits(source.config, o.micro_batch, seq_len, *device, std::max(1, dist.rank_info().local_size),
                       "--micro-batch");
  }
  std::vector<std::int32_t> tokens;
  if (o.print_logits) {
    tokens = parse_tokens(o.tokens, source.token_vocab);
    check_within_context(static_cast<std::int64_t>(tokens.size()), source.config, "--tokens");
  }
  if (root && !source.is_export) {
    if (const auto notice = unhealthy_checkpoint_notice(source.path)) warn(world.rank(), *notice);
  }
  Gpt model(source.config);
  ShardingConfig sharding;
  sharding.stage = parse_zero_stage(o.zero);
  sharding.use = EngineUse::kInference;
  const std::unique_ptr<Communicator> device_world =
      make_device_world(*device, world, dist.comm_options(), resolved_device_comm(o.device));
  ShardedEngine engine(model, *device, device_world ? *device_world : world, sharding, /*seed=*/0);
  load_model_weights(engine, world, source);
  Trainer trainer(engine);
  if (root) {
    std::fprintf(stderr, "tessera_eval: GPT %s from %s, %d rank(s); %s\n", source.config.to_string().c_str(),
                 source.path.c_str(), world.size(), device_line(o.device, *device).c_str());
  }
  if (data) {
    const SampleLoader loader(*data, seq_len, 0, SampleOrder::kSequential);
    const ValidationSet set{o.eval_batches, o.micro_batch};
    const float loss = validation_loss(trainer, loader, set);
    if (root) {
      std::printf("val loss %.9g (%lld windows of %lld tokens from %s, %d rank(s))\n", loss,
                  static_cast<long long>(set.windows()), static_cast<long long>(seq_len), o.data.c_str(), world.size());
    }
  }
  if (o.print_logits) {
    const auto t = static_cast<std::int64_t>(tokens.size());
    Context ctx(*device);
    ctx.training = false;
    const Tensor logits =
        engine.forward(ctx, Tensor::from_host_i32(*device, tokens, {1, t}, MemoryCategory::kWorkspace));
    const std::vector<float> host = logits.to_host_f32();
    if (root) print_logits_json(tokens, host, source.config.vocab_size, source.token_vocab);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  return tessera::run_distributed(argc, argv, [](tessera::DistributedContext& dist) {
    const tessera::SettingNames names{
        {"eval.batches", "--eval-batches"}, {"eval.micro", "--micro-batch"}, {"sharding.stage", "--zero"}};
    return tessera::reword_setting_errors(names, [&] { return tessera::evaluate(dist); });
  });
}
