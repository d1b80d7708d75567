// GPT2Config's config.json through nlohmann-json.
#include "tessera/checkpointing/export/hf_gpt2_config.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "tessera/checkpointing/format/checkpoint_error.hpp"

namespace tessera {
namespace {

using nlohmann::json;

std::int64_t model_field(const RunConfig& model, const std::string& key) {
  const auto it = model.model().find(key);
  if (it == model.model().end()) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch, "the checkpoint records no model field " + key);
  }
  return std::stoll(it->second);
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
  if (config.value("model_type", std::string()) != "gpt2") {
    throw CheckpointError(CheckpointErrorKind::kUnknownFormat, path.string() + " is not a GPT-2 config (model_type '" +
                                                                   config.value("model_type", std::string()) +
                                                                   "'); Tessera reads GPT-2 models");
  }
  RunConfig fields;
  const std::pair<const char*, const char*> keys[] = {{"vocab_size", "vocab_size"},
                                                      {"n_positions", "max_seq_len"},
                                                      {"n_layer", "layers"},
                                                      {"n_head", "heads"},
                                                      {"n_embd", "channels"}};
  for (const auto& [theirs, ours] : keys) {
    if (!config.contains(theirs) || !config[theirs].is_number_integer()) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData, path.string() + " has no integer " + theirs);
    }
    fields.set_model(ours, config[theirs].get<std::int64_t>());
  }
  return fields;
}

void check_hf_model_fields(const RunConfig& stored, const RunConfig& expected, const std::string& where) {
  for (const auto& [key, value] : expected.model()) {
    const auto it = stored.model().find(key);
    if (it == stored.model().end() || it->second == value) continue;
    if (key == "vocab_size" && std::stoll(it->second) <= std::stoll(value)) continue;  // the run pads the vocabulary
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                          where + " was exported from a model with " + key + " = " + it->second + ", this run has " +
                              key + " = " + value + "; use the exported model's options");
  }
}

}  // namespace tessera
