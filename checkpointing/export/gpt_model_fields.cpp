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
  // The fields beyond GPT-2's defaults only where they differ, so a GPT-2 records what it always has.
  const GptConfig defaults;
  if (gpt.is_llama()) {
    config.set_model("architecture", std::string(gpt_architecture_name(gpt.architecture)));
    config.set_model("kv_heads", gpt.key_value_heads());
    config.set_model("rope_theta", gpt.rope_theta);
  }
  if (gpt.is_llama() || gpt.ffn_dim > 0) config.set_model("ffn_dim", gpt.mlp_hidden());
  if (gpt.norm_eps != defaults.norm_eps) config.set_model("norm_eps", gpt.norm_eps);
  if (gpt.tied_head != !gpt.is_llama()) config.set_model("tied_head", gpt.tied_head ? 1 : 0);
}

GptConfig gpt_config_of(const RunConfig& config, const std::string& where) {
  GptConfig gpt;
  gpt.vocab_size = field(config, "vocab_size", where);
  gpt.max_seq_len = field(config, "max_seq_len", where);
  gpt.layers = field(config, "layers", where);
  gpt.heads = field(config, "heads", where);
  gpt.channels = field(config, "channels", where);
  const auto& model = config.model();
  auto text = [&](const char* key) -> const std::string* {
    const auto it = model.find(key);
    return it == model.end() ? nullptr : &it->second;
  };
  try {
    if (const std::string* a = text("architecture")) gpt.architecture = parse_gpt_architecture(*a);
    gpt.tied_head = !gpt.is_llama();
    if (text("kv_heads") != nullptr) gpt.kv_heads = field(config, "kv_heads", where);
    if (text("ffn_dim") != nullptr) gpt.ffn_dim = field(config, "ffn_dim", where);
    if (const std::string* t = text("rope_theta"))
      gpt.rope_theta = static_cast<float>(parse_finite(*t, where + ": model field rope_theta"));
    if (const std::string* e = text("norm_eps"))
      gpt.norm_eps = static_cast<float>(parse_finite(*e, where + ": model field norm_eps"));
    if (const std::string* h = text("tied_head"))
      gpt.tied_head = parse_integer(*h, where + ": model field tied_head", 0) != 0;
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, e.what());
  }
  try {
    gpt.validate();
  } catch (const SettingError& e) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, where + " records a model no GPT can have: " + e.what());
  }
  return gpt;
}

GptArchitecture gpt_architecture_of(const RunConfig& config, const std::string& where) {
  const auto it = config.model().find("architecture");
  if (it == config.model().end()) return GptArchitecture::kGpt2;
  try {
    return parse_gpt_architecture(it->second);
  } catch (const SettingError& e) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, where + ": model field architecture: " + e.what());
  }
}

std::int64_t gpt_parameter_count(const GptConfig& gpt) { return gpt.parameter_count(); }

}  // namespace tessera
