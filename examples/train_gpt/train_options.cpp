// train_gpt option parsing and validation.
#include "train_options.hpp"

#include <boost/program_options.hpp>

#include <iostream>
#include <stdexcept>

namespace tessera {

namespace po = boost::program_options;

namespace {

void require_positive(std::int64_t value, const char* option) {
  if (value <= 0) {
    throw std::invalid_argument(std::string("--") + option + " must be positive, got " + std::to_string(value));
  }
}

}  // namespace

std::optional<TrainOptions> parse_train_options(int argc, char** argv) {
  TrainOptions o;
  po::options_description data("Data");
  data.add_options()
      ("data", po::value(&o.data)->multitoken()->default_value(o.data, "data/corpus.bin"),
       "training token files or glob patterns (llm.c format; make one with tessera_prepare)")
      ("val-data", po::value(&o.val_data), "validation token file (default: <data>_val.bin if present)");
  po::options_description model("Model (GPT-2 layout)");
  model.add_options()
      ("layers", po::value(&o.layers)->default_value(o.layers), "transformer blocks L")
      ("heads", po::value(&o.heads)->default_value(o.heads), "attention heads NH")
      ("dim", po::value(&o.dim)->default_value(o.dim), "channels C (divisible by heads)")
      ("seq-len", po::value(&o.seq_len)->default_value(o.seq_len), "sequence length T")
      ("vocab", po::value(&o.vocab)->default_value(o.vocab),
       "vocabulary size V (0: the byte tokenizer's 257, padded to a multiple of 64)");
  po::options_description train("Training");
  train.add_options()
      ("steps", po::value(&o.steps)->default_value(o.steps), "optimizer steps")
      ("micro-batch", po::value(&o.micro_batch)->default_value(o.micro_batch), "sequences per micro-batch B")
      ("lr", po::value(&o.lr)->default_value(o.lr), "peak learning rate")
      ("warmup", po::value(&o.warmup)->default_value(o.warmup), "linear warmup steps")
      ("min-lr-ratio", po::value(&o.min_lr_ratio)->default_value(o.min_lr_ratio), "cosine floor, as a fraction of --lr")
      ("weight-decay", po::value(&o.weight_decay)->default_value(o.weight_decay), "AdamW decoupled weight decay")
      ("beta1", po::value(&o.beta1)->default_value(o.beta1), "AdamW beta1")
      ("beta2", po::value(&o.beta2)->default_value(o.beta2), "AdamW beta2")
      ("grad-clip", po::value(&o.grad_clip)->default_value(o.grad_clip), "global gradient-norm clip (0: off)")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed for initialisation, data order and sampling")
      ("threads", po::value(&o.threads)->default_value(o.threads), "CPU threads per process (0: OpenMP default)");
  po::options_description output("Output");
  output.add_options()
      ("log-every", po::value(&o.log_every)->default_value(o.log_every), "steps between log lines")
      ("eval-every", po::value(&o.eval_every)->default_value(o.eval_every), "steps between validation losses (0: off)")
      ("eval-batches", po::value(&o.eval_batches)->default_value(o.eval_batches), "micro-batches per validation")
      ("sample-tokens", po::value(&o.sample_tokens)->default_value(o.sample_tokens), "tokens sampled at the end (0: none)")
      ("temperature", po::value(&o.temperature)->default_value(o.temperature), "sampling temperature")
      ("help,h", "print this help");
  po::options_description all("train_gpt: train a GPT on a token file\nUsage: train_gpt [options]");
  all.add(data).add(model).add(train).add(output);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw std::invalid_argument(std::string(e.what()) + " (see train_gpt --help)");
  }
  if (vm.count("help")) {
    std::cout << all << "\n";
    return std::nullopt;
  }
  require_positive(o.layers, "layers");
  require_positive(o.heads, "heads");
  require_positive(o.dim, "dim");
  require_positive(o.seq_len, "seq-len");
  require_positive(o.steps, "steps");
  require_positive(o.micro_batch, "micro-batch");
  require_positive(o.log_every, "log-every");
  if (o.vocab < 0) throw std::invalid_argument("--vocab must be >= 0 (0 picks the tokenizer's)");
  if (o.lr <= 0) throw std::invalid_argument("--lr must be positive, got " + std::to_string(o.lr));
  if (o.warmup < 0) throw std::invalid_argument("--warmup must be >= 0");
  if (o.dim % o.heads != 0) {
    throw std::invalid_argument("--dim " + std::to_string(o.dim) + " is not divisible by --heads " +
                                std::to_string(o.heads) + "; pick a dim that is a multiple of heads");
  }
  return o;
}

}  // namespace tessera
