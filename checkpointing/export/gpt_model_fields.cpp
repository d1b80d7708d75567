// GPT model fields of a RunConfig, both ways.
#include "tessera/checkpointing/export/gpt_model_fields.hpp"

#include <cstdint>

#include "tessera/checkpointing/format/checkpoint_error.hpp"

namespace tessera {
namespace {

std::int64_t field(const RunConfig& config, const std::string& key, const std::string& where) {
  const auto it = config.model().find(key);
  if (it == config.model().end()) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch, where + " records no model field " + key);
  }
  return std::stoll(it->second);
}

}  // namespace

void add_gpt_config(RunConfig& config, const GptConfig& gpt) {
  config.set_model("vocab_size", gpt.vocab_size);
  config.set_model("max_seq_len", gpt.max_seq_len);
  config.set_model("layers", gpt.layers);
  config.set_model("heads", gpt.heads);
  config.set_model("channels", gpt.channels);
}

GptConfig gpt_config_of(const RunConfig& config, const std::string& where) {
  GptConfig gpt;
  gpt.vocab_size = field(config, "vocab_size", where);
  gpt.max_seq_len = field(config, "max_seq_len", where);
  gpt.layers = field(config, "layers", where);
  gpt.heads = field(config, "heads", where);
  gpt.channels = field(config, "channels", where);
  return gpt;
}

}  // namespace tessera
