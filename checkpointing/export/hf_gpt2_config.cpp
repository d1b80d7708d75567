// GPT2Config's config.json through nlohmann-json.
#include "tessera/checkpointing/export/hf_gpt2_config.hpp"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/core/parse_number.hpp"

namespace tessera {
namespace {

using nlohmann::json;

std::int64_t model_field(const RunConfig& model, const std::string& key) {
  const auto it = model.model().find(key);
  if (it == model.model().end()) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch, "the checkpoint records no model field " + key);
  }
  return parse_integer(it->second, "the checkpoint's model field " + key, 1);
}

// config[key] as a positive integer that fits int64: not a fraction, string, bool or null.
std::int64_t positive_field(const json& config, const char* key, const std::filesystem::path& path) {
  const auto it = config.find(key);
  const bool fits = it != config.end() && it->is_number_integer() &&
                    (it->is_number_unsigned() ? it->get<std::uint64_t>() <= std::numeric_limits<std::int64_t>::max()
                                              : it->get<std::int64_t>() >= 1);
  if (!fits || it->get<std::int64_t>() < 1) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          path.string() + ": field " + key + " is " +
                              (it == config.end() ? std::string("missing") : quote_excerpt(it->dump())) +
                              "; it must be a positive integer");
  }
  return it->get<std::int64_t>();
}

// The GPT2Config fields that change what the model computes, beyond its sizes: each value Tessera's
// GPT computes too is accepted, any other refused naming the field and the value, never ignored.
// (Dropout probabilities change training, not the function; Tessera trains without dropout.)
void check_computation_fields(const json& config, const std::filesystem::path& path) {
  auto refuse = [&](const char* key, const std::string& supported) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch, path.string() + ": field " + key + " is " +
                                                                    quote_excerpt(config.at(key).dump()) +
                                                                    "; Tessera's GPT-2 computes only " + supported);
  };
  auto present = [&](const char* key) { return config.contains(key) && !config.at(key).is_null(); };
  if (present("activation_function")) {
    const json& f = config.at("activation_function");
    if (!f.is_string() || (f != "gelu_new" && f != "gelu_pytorch_tanh")) {
      refuse("activation_function", "\"gelu_new\" (GELU's tanh approximation, also \"gelu_pytorch_tanh\")");
    }
  }
  if (present("layer_norm_epsilon")) {
    const json& eps = config.at("layer_norm_epsilon");
    if (!eps.is_number() || eps.get<double>() != 1e-5) refuse("layer_norm_epsilon", "1e-05");
  }
  if (present("n_inner")) {
    const json& inner = config.at("n_inner");
    const json& channels = config.at("n_embd");
    if (!inner.is_number_integer() || !channels.is_number_integer() ||
        inner.get<std::int64_t>() != 4 * channels.get<std::int64_t>()) {
      refuse("n_inner", "null or 4 * n_embd (" + channels.dump() + " * 4)");
    }
  }
  const std::pair<const char*, bool> switches[] = {{"tie_word_embeddings", true},
                                                   {"scale_attn_weights", true},
                                                   {"scale_attn_by_inverse_layer_idx", false},
                                                   {"add_cross_attention", false}};
  for (const auto& [key, computed] : switches) {
    if (present(key) && config.at(key) != computed) {
      refuse(key, computed ? "true (the default)" : "false (the default)");
    }
  }
  if (present("n_ctx") && config.at("n_ctx") != config.at("n_positions")) {
    refuse("n_ctx", "a context equal to n_positions (" + config.at("n_positions").dump() + ")");
  }
}

}  // namespace

void write_hf_gpt2_config(const std::filesystem::path& path, const RunConfig& model, std::int64_t vocab_size,
                          DType dtype, std::int64_t step) {
  const std::int64_t positions = model_field(model, "max_seq_len");
  json config = {{"architectures", {"GPT2LMHeadModel"}},
                 {"model_type", "gpt2"},
                 {"vocab_size", vocab_size},
                 {"n_positions", positions},
                 {"n_ctx", positions},
                 {"n_embd", model_field(model, "channels")},
                 {"n_layer", model_field(model, "layers")},
                 {"n_head", model_field(model, "heads")},
                 {"n_inner", nullptr},
                 {"activation_function", "gelu_new"},
                 {"layer_norm_epsilon", 1e-5},
                 {"initializer_range", 0.02},
                 {"resid_pdrop", 0.0},
                 {"embd_pdrop", 0.0},
                 {"attn_pdrop", 0.0},
                 {"scale_attn_weights", true},
                 {"tie_word_embeddings", true},
                 {"bos_token_id", vocab_size - 1},
                 {"eos_token_id", vocab_size - 1},
                 {"torch_dtype", dtype == DType::kBF16 ? "bfloat16" : "float32"},
                 {"tessera_padded_vocab_size", model_field(model, "vocab_size")},
                 {"tessera_step", step}};
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << config.dump(2) << "\n";
    if (!out) throw CheckpointError(CheckpointErrorKind::kIo, "cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, path);
}

RunConfig read_hf_gpt2_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    throw CheckpointError(CheckpointErrorKind::kMissingFile,
                          path.string() + " is missing: a safetensors export is read with the config.json beside it");
  }
  json config;
  try {
    config = json::parse(in);
  } catch (const json::exception& e) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, path.string() + " is not JSON: " + e.what());
  }
  if (!config.is_object()) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          path.string() + " is a JSON " + config.type_name() + ", not an object of GPT2Config fields");
  }
  const auto type = config.find("model_type");
  if (type == config.end() || !type->is_string() || type->get<std::string>() != "gpt2") {
    throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                          path.string() + ": field model_type is " +
                              (type == config.end() ? std::string("missing") : quote_excerpt(type->dump())) +
                              ", not \"gpt2\"; Tessera reads GPT-2 models");
  }
  RunConfig fields;
  const std::pair<const char*, const char*> keys[] = {{"vocab_size", "vocab_size"},
                                                      {"n_positions", "max_seq_len"},
                                                      {"n_layer", "layers"},
                                                      {"n_head", "heads"},
                                                      {"n_embd", "channels"}};
  for (const auto& [theirs, ours] : keys) {
    fields.set_model(ours, positive_field(config, theirs, path));
  }
  gpt_config_of(fields, path.string());  // a model that can exist: heads divide channels, counts fit
  check_computation_fields(config, path);
  return fields;
}

void check_hf_model_fields(const RunConfig& stored, const RunConfig& expected, const std::string& where) {
  for (const auto& [key, value] : expected.model()) {
    const auto it = stored.model().find(key);
    if (it == stored.model().end() || it->second == value) continue;
    if (key == "vocab_size" && parse_integer(it->second, where + ": model field vocab_size") <=
                                   parse_integer(value, "this run's model field vocab_size")) {
      continue;  // the run pads the vocabulary
    }
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                          where + " was exported from a model with " + key + " = " + it->second + ", this run has " +
                              key + " = " + value + "; use the exported model's options");
  }
}

}  // namespace tessera
