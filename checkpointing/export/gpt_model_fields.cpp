// GPT model fields of a RunConfig, both ways, read strictly and checked as a model.
#include "tessera/checkpointing/export/gpt_model_fields.hpp"

#include <cstdint>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/core/parse_number.hpp"
#include "tessera/core/setting_error.hpp"

namespace tessera {
namespace {

std::int64_t field(const RunConfig& config, const std::string& key, const std::string& where) {
  const auto it = config.model().find(key);
  if (it == config.model().end()) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch, where + " records no model field " + key);
  }
  try {
    return parse_integer(it->second, where + ": model field " + key, 1);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, e.what());
  }
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
  try {
    gpt.validate();
  } catch (const SettingError& e) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, where + " records a model no GPT can have: " + e.what());
  }
  return gpt;
}

std::int64_t gpt_parameter_count(const GptConfig& gpt) {
  const std::int64_t c = gpt.channels;  // validate() bounds the total below 2^56: no product overflows
  return gpt.vocab_size * c + gpt.max_seq_len * c + gpt.layers * (12 * c * c + 13 * c) + 2 * c;
}

}  // namespace tessera
