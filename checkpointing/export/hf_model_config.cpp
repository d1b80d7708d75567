// GPT2Config's and LlamaConfig's config.json through nlohmann-json.
#include "tessera/checkpointing/export/hf_model_config.hpp"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unistd.h>

#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/core/number_text.hpp"
#include "tessera/core/parse_number.hpp"

namespace tessera {
namespace {

using nlohmann::json;

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

// Reads and refuses the fields of one config.json that change what the model computes.
class ComputationFields {
 public:
  ComputationFields(const json& config, const std::filesystem::path& path, std::string model)
      : config_(config), path_(path), model_(std::move(model)) {}

  bool present(const char* key) const { return config_.contains(key) && !config_.at(key).is_null(); }

  [[noreturn]] void refuse(const char* key, const std::string& supported) const {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch, path_.string() + ": field " + key + " is " +
                                                                    quote_excerpt(config_.at(key).dump()) + "; " +
                                                                    model_ + " computes only " + supported);
  }

  // A boolean switch: absent/null, or `computed`; any other value refused.
  void require_switch(const char* key, bool computed) const {
    if (present(key) && config_.at(key) != computed)
      refuse(key, computed ? "true (the default)" : "false (the default)");
  }

  // A positive number (an epsilon, a rotary base) when present.
  std::optional<double> positive_number(const char* key) const {
    if (!present(key)) return std::nullopt;
    const json& v = config_.at(key);
    if (!v.is_number() || !(v.get<double>() > 0.0) || v.get<double>() > std::numeric_limits<float>::max()) {
      refuse(key, "a positive number");
    }
    return v.get<double>();
  }

  // A string field with one computed value.
  void require_string(const char* key, std::initializer_list<const char*> computed,
                      const std::string& supported) const {
    if (!present(key)) return;
    const json& v = config_.at(key);
    for (const char* c : computed) {
      if (v.is_string() && v.get<std::string>() == c) return;
    }
    refuse(key, supported);
  }

 private:
  const json& config_;
  const std::filesystem::path& path_;
  std::string model_;
};

GptConfig read_gpt2(const json& config, const std::filesystem::path& path) {
  GptConfig g;
  g.vocab_size = positive_field(config, "vocab_size", path);
  g.max_seq_len = positive_field(config, "n_positions", path);
  g.layers = positive_field(config, "n_layer", path);
  g.heads = positive_field(config, "n_head", path);
  g.channels = positive_field(config, "n_embd", path);
  const ComputationFields f(config, path, "Tessera's GPT-2");
  f.require_string("activation_function", {"gelu_new", "gelu_pytorch_tanh"},
                   "\"gelu_new\" (GELU's tanh approximation, also \"gelu_pytorch_tanh\")");
  if (const auto eps = f.positive_number("layer_norm_epsilon")) g.norm_eps = static_cast<float>(*eps);
  if (f.present("n_inner")) {
    const json& inner = config.at("n_inner");
    if (!inner.is_number_integer() || inner.get<std::int64_t>() < 1) f.refuse("n_inner", "null or a positive size");
    if (inner.get<std::int64_t>() != 4 * g.channels) g.ffn_dim = inner.get<std::int64_t>();
  }
  if (f.present("tie_word_embeddings")) {
    if (!config.at("tie_word_embeddings").is_boolean()) f.refuse("tie_word_embeddings", "true or false");
    g.tied_head = config.at("tie_word_embeddings").get<bool>();
  }
  f.require_switch("scale_attn_weights", true);
  f.require_switch("scale_attn_by_inverse_layer_idx", false);
  f.require_switch("add_cross_attention", false);
  if (f.present("n_ctx") && config.at("n_ctx") != config.at("n_positions")) {
    f.refuse("n_ctx", "a context equal to n_positions (" + config.at("n_positions").dump() + ")");
  }
  return g;
}

GptConfig read_llama(const json& config, const std::filesystem::path& path) {
  GptConfig g = GptConfig::llama(
      positive_field(config, "vocab_size", path), positive_field(config, "max_position_embeddings", path),
      positive_field(config, "num_hidden_layers", path), positive_field(config, "num_attention_heads", path),
      positive_field(config, "hidden_size", path));
  g.ffn_dim = positive_field(config, "intermediate_size", path);
  g.kv_heads = config.contains("num_key_value_heads") && !config.at("num_key_value_heads").is_null()
                   ? positive_field(config, "num_key_value_heads", path)
                   : g.heads;
  g.norm_eps = 1e-6f;  // LlamaConfig's default rms_norm_eps
  const ComputationFields f(config, path, "Tessera's Llama");
  f.require_string("hidden_act", {"silu"}, "\"silu\" (SwiGLU)");
  if (const auto eps = f.positive_number("rms_norm_eps")) g.norm_eps = static_cast<float>(*eps);
  if (const auto theta = f.positive_number("rope_theta")) g.rope_theta = static_cast<float>(*theta);
  if (f.present("rope_parameters")) {  // transformers 5's form: {"rope_type": "default", "rope_theta": ...}
    const json& rope = config.at("rope_parameters");
    if (!rope.is_object()) f.refuse("rope_parameters", "an object of rope_type \"default\" and rope_theta");
    // The type first: a scaled rope is named by its type, not by whichever of its fields sorts first.
    std::vector<std::pair<std::string, json>> items;
    if (rope.contains("rope_type")) items.emplace_back("rope_type", rope.at("rope_type"));
    for (const auto& [key, value] : rope.items()) {
      if (key != "rope_type") items.emplace_back(key, value);
    }
    for (const auto& [key, value] : items) {
      const std::string field = "rope_parameters." + key;
      if (key == "rope_type" && value == "default") continue;
      if (key == "rope_theta" && value.is_number() && value.get<double>() > 0.0 &&
          value.get<double>() <= std::numeric_limits<float>::max()) {
        if (f.present("rope_theta") && config.at("rope_theta") != value) {
          f.refuse("rope_theta", "one rotary base (rope_parameters.rope_theta is " + value.dump() + ")");
        }
        g.rope_theta = static_cast<float>(value.get<double>());
        continue;
      }
      throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                            path.string() + ": field " + field + " is " + quote_excerpt(value.dump()) +
                                "; Tessera's Llama computes only rope_type \"default\" (rotary positions without "
                                "scaling) with a positive rope_theta");
    }
  }
  f.require_switch("attention_bias", false);
  f.require_switch("mlp_bias", false);
  if (f.present("rope_scaling")) f.refuse("rope_scaling", "null (rotary positions without scaling)");
  if (f.present("head_dim") && config.at("head_dim") != g.channels / g.heads) {
    f.refuse("head_dim", "hidden_size / num_attention_heads (" + std::to_string(g.channels / g.heads) + ")");
  }
  if (f.present("pretraining_tp") && config.at("pretraining_tp") != 1) f.refuse("pretraining_tp", "1");
  if (f.present("tie_word_embeddings")) {
    if (!config.at("tie_word_embeddings").is_boolean()) f.refuse("tie_word_embeddings", "true or false");
    g.tied_head = config.at("tie_word_embeddings").get<bool>();
  }
  return g;
}

// A float as the JSON number of its shortest text (1e-5f as 1e-05, not 9.999999747378752e-06).
double json_number(float value) { return std::stod(shortest_number_text(value)); }

json gpt2_json(const GptConfig& g) {
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"n_positions", g.max_seq_len},
          {"n_ctx", g.max_seq_len},
          {"n_embd", g.channels},
          {"n_layer", g.layers},
          {"n_head", g.heads},
          {"n_inner", g.ffn_dim > 0 ? json(g.ffn_dim) : json(nullptr)},
          {"activation_function", "gelu_new"},
          {"layer_norm_epsilon", json_number(g.norm_eps)},
          {"initializer_range", 0.02},
          {"resid_pdrop", 0.0},
          {"embd_pdrop", 0.0},
          {"attn_pdrop", 0.0},
          {"scale_attn_weights", true}};
}

json llama_json(const GptConfig& g) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", g.channels},
          {"intermediate_size", g.mlp_hidden()},
          {"num_hidden_layers", g.layers},
          {"num_attention_heads", g.heads},
          {"num_key_value_heads", g.key_value_heads()},
          {"head_dim", g.head_size()},
          {"max_position_embeddings", g.max_seq_len},
          {"rms_norm_eps", json_number(g.norm_eps)},
          {"rope_theta", json_number(g.rope_theta)},
          {"rope_scaling", nullptr},
          {"hidden_act", "silu"},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"mlp_bias", false},
          {"pretraining_tp", 1},
          {"initializer_range", 0.02}};
}

// The fields each config.json may hold: those read above, and those that do not change what the
// model computes (names, versions, token ids, dropout, caching, the dtype the weights are stored in,
// GPT-2's sequence-summary head of another model class). Any other field is refused by name: it may
// change the computation in a way Tessera would not follow.
const std::set<std::string>& known_fields(bool gpt2) {
  static const std::set<std::string> common{"_name_or_path",     "architectures",
                                            "model_type",        "transformers_version",
                                            "torch_dtype",       "dtype",
                                            "use_cache",         "bos_token_id",
                                            "eos_token_id",      "pad_token_id",
                                            "initializer_range", "tie_word_embeddings",
                                            "output_attentions", "output_hidden_states",
                                            "return_dict",       "id2label",
                                            "label2id",          "task_specific_params",
                                            "vocab_size"};
  static const std::set<std::string> gpt2_fields{"n_positions",
                                                 "n_ctx",
                                                 "n_embd",
                                                 "n_layer",
                                                 "n_head",
                                                 "n_inner",
                                                 "activation_function",
                                                 "resid_pdrop",
                                                 "embd_pdrop",
                                                 "attn_pdrop",
                                                 "layer_norm_epsilon",
                                                 "summary_type",
                                                 "summary_use_proj",
                                                 "summary_activation",
                                                 "summary_first_dropout",
                                                 "summary_proj_to_labels",
                                                 "scale_attn_weights",
                                                 "scale_attn_by_inverse_layer_idx",
                                                 "reorder_and_upcast_attn",
                                                 "add_cross_attention"};
  static const std::set<std::string> llama_fields{"hidden_size",
                                                  "intermediate_size",
                                                  "num_hidden_layers",
                                                  "num_attention_heads",
                                                  "num_key_value_heads",
                                                  "head_dim",
                                                  "max_position_embeddings",
                                                  "rms_norm_eps",
                                                  "rope_theta",
                                                  "rope_scaling",
                                                  "rope_parameters",
                                                  "hidden_act",
                                                  "attention_bias",
                                                  "attention_dropout",
                                                  "mlp_bias",
                                                  "pretraining_tp"};
  static const std::set<std::string> gpt2_all = [] {
    std::set<std::string> all = common;
    all.insert(gpt2_fields.begin(), gpt2_fields.end());
    return all;
  }();
  static const std::set<std::string> llama_all = [] {
    std::set<std::string> all = common;
    all.insert(llama_fields.begin(), llama_fields.end());
    return all;
  }();
  return gpt2 ? gpt2_all : llama_all;
}

void refuse_unknown_fields(const json& config, const std::filesystem::path& path, bool gpt2) {
  for (const auto& [key, value] : config.items()) {
    if (key.rfind("tessera_", 0) == 0 || known_fields(gpt2).count(key) != 0) continue;
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                          path.string() + ": field " + key + " is " + quote_excerpt(value.dump()) + ", not a " +
                              (gpt2 ? "GPT2Config" : "LlamaConfig") +
                              " field Tessera knows, so it cannot tell whether the model computes what Tessera "
                              "would; remove it if it does not change the computation");
  }
}

// The model fields recorded only where a model differs from GPT-2's defaults (gpt_model_fields.hpp).
constexpr const char* kArchitectureFields[] = {"architecture", "kv_heads", "ffn_dim",
                                               "rope_theta",   "norm_eps", "tied_head"};

}  // namespace

void write_hf_config(const std::filesystem::path& path, const RunConfig& model, std::int64_t vocab_size, DType dtype,
                     std::int64_t step) {
  const GptConfig g = gpt_config_of(model, "the checkpoint");
  json config = g.is_llama() ? llama_json(g) : gpt2_json(g);
  config["vocab_size"] = vocab_size;
  config["tie_word_embeddings"] = g.tied_head;
  config["bos_token_id"] = vocab_size - 1;
  config["eos_token_id"] = vocab_size - 1;
  config["torch_dtype"] = dtype == DType::kBF16 ? "bfloat16" : "float32";
  config["tessera_padded_vocab_size"] = g.vocab_size;
  config["tessera_step"] = step;
  // Written whole under a name of this process's own, so that exports writing beside each other at once
  // never rename one another's file.
  const std::filesystem::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << config.dump(2) << "\n";
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw CheckpointError(CheckpointErrorKind::kIo, "cannot write " + tmp.string());
    }
  }
  std::filesystem::rename(tmp, path);
}

RunConfig read_hf_config(const std::filesystem::path& path) {
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
    throw CheckpointError(CheckpointErrorKind::kCorruptData, path.string() + " is a JSON " + config.type_name() +
                                                                 ", not an object of a model's config fields");
  }
  const auto type = config.find("model_type");
  const bool gpt2 = type != config.end() && type->is_string() && type->get<std::string>() == "gpt2";
  const bool llama = type != config.end() && type->is_string() && type->get<std::string>() == "llama";
  if (!gpt2 && !llama) {
    throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                          path.string() + ": field model_type is " +
                              (type == config.end() ? std::string("missing") : quote_excerpt(type->dump())) +
                              ", not \"gpt2\" or \"llama\"; Tessera reads GPT-2 and Llama models");
  }
  const GptConfig g = gpt2 ? read_gpt2(config, path) : read_llama(config, path);
  refuse_unknown_fields(config, path, gpt2);
  RunConfig fields;
  add_gpt_config(fields, g);
  gpt_config_of(fields, path.string());  // a model that can exist: heads divide channels, counts fit
  return fields;
}

void check_hf_model_fields(const RunConfig& stored, const RunConfig& expected, const std::string& where) {
  auto value_of = [](const RunConfig& c, const std::string& key) {
    const auto it = c.model().find(key);
    return it == c.model().end() ? std::string() : it->second;
  };
  auto refuse = [&](const std::string& key, const std::string& theirs, const std::string& ours) {
    auto shown = [](const std::string& v) { return v.empty() ? std::string("(GPT-2's default)") : v; };
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                          where + " was exported from a model with " + key + " = " + shown(theirs) + ", this run has " +
                              key + " = " + shown(ours) + "; use the exported model's options");
  };
  for (const auto& [key, value] : expected.model()) {
    const auto it = stored.model().find(key);
    if (it == stored.model().end() || it->second == value) continue;
    if (key == "vocab_size" && parse_integer(it->second, where + ": model field vocab_size") <=
                                   parse_integer(value, "this run's model field vocab_size")) {
      continue;  // the run pads the vocabulary
    }
    refuse(key, it->second, value);
  }
  for (const char* key : kArchitectureFields) {  // recorded only where not the default: absent is the default
    const std::string theirs = value_of(stored, key), ours = value_of(expected, key);
    if (theirs != ours) refuse(key, theirs, ours);
  }
}

}  // namespace tessera
