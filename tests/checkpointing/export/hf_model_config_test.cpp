// config.json of another type than GPT2Config / LlamaConfig expects is refused naming the file and
// the field (never nlohmann-json's bare type_error); sizes that make no GPT are refused; a written
// config (GPT-2 and Llama) reads back to the same model fields; every field that changes the
// computation is read where Tessera computes its value (an untied head, an MLP size, a norm
// epsilon, key/value heads, a rotary base) and refused, naming field and value, at any other.
#include "tessera/checkpointing/export/hf_model_config.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

const char* kValid =
    R"({"model_type": "gpt2", "vocab_size": 11, "n_positions": 4, "n_layer": 1, "n_head": 2, "n_embd": 8})";

std::string with(std::string text, const std::string& from, const std::string& to) {
  return text.replace(text.find(from), from.size(), to);
}

// The refusal of config.json holding `text` ("" when it reads).
std::string refusal(const testing::ScratchDir& dir, const std::string& text) {
  const auto path = dir / "config.json";
  std::ofstream(path) << text;
  try {
    read_hf_config(path);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(HfGpt2Config, WrittenConfigReadsBack) {
  testing::ScratchDir dir("hf_gpt2_config");
  RunConfig model;
  for (const auto& [k, v] :
       {std::pair{"vocab_size", 16}, {"max_seq_len", 4}, {"layers", 1}, {"heads", 2}, {"channels", 8}}) {
    model.set_model(k, std::int64_t{v});
  }
  write_hf_config(dir / "config.json", model, 11, DType::kF32, 3);
  const RunConfig read = read_hf_config(dir / "config.json");
  EXPECT_EQ(read.model().at("vocab_size"), "11");
  EXPECT_EQ(read.model().at("channels"), "8");
  EXPECT_EQ(refusal(dir, kValid), "");
}

TEST(HfGpt2Config, WrongJsonTypesNameTheFileAndTheField) {
  testing::ScratchDir dir("hf_gpt2_config");
  const std::string file = (dir / "config.json").string();
  const std::pair<std::string, std::string> cases[] = {
      {with(kValid, "\"gpt2\"", "2"), "model_type"},  // was [json.exception.type_error.302]
      {with(kValid, "\"gpt2\"", "[\"gpt2\"]"), "model_type"},
      {with(kValid, "\"n_layer\": 1", "\"n_layer\": \"1\""), "n_layer"},
      {with(kValid, "\"n_embd\": 8", "\"n_embd\": 8.5"), "n_embd"},
      {with(kValid, "\"n_head\": 2", "\"n_head\": true"), "n_head"},
      {with(kValid, "\"vocab_size\": 11", "\"vocab_size\": null"), "vocab_size"},
      {with(kValid, "\"vocab_size\": 11", "\"vocab_size\": -11"), "vocab_size"},
      {with(kValid, "\"n_positions\": 4", "\"n_positions\": 18446744073709551615"), "n_positions"},
      {with(kValid, "\"n_positions\": 4, ", ""), "n_positions is missing"},
      {"[1, 2]", "not an object"}};
  for (const auto& [text, field] : cases) {
    const std::string e = refusal(dir, text);
    EXPECT_NE(e.find(file), std::string::npos) << text << " -> " << e;
    EXPECT_NE(e.find(field), std::string::npos) << text << " -> " << e;
    EXPECT_EQ(e.find("json.exception"), std::string::npos) << text << " -> " << e;
  }
}

TEST(HfGpt2Config, SizesThatMakeNoGptAreRefused) {
  testing::ScratchDir dir("hf_gpt2_config");
  EXPECT_NE(refusal(dir, with(kValid, "\"n_head\": 2", "\"n_head\": 3")).find("divisible"), std::string::npos);
  const std::string huge = refusal(dir, with(kValid, "\"n_layer\": 1", "\"n_layer\": 9223372036854775807"));
  EXPECT_NE(huge.find("too large"), std::string::npos) << huge;
}

TEST(HfGpt2Config, FieldsThatChangeTheComputationAreReadNotIgnored) {
  testing::ScratchDir dir("hf_gpt2_config");
  const std::string file = (dir / "config.json").string();
  // GPT-2's own config.json (its computation fields, with dropout) reads.
  const std::string gpt2 = with(kValid, "\"n_embd\": 8",
                                "\"n_embd\": 8, \"n_ctx\": 4, \"n_inner\": null, "
                                "\"activation_function\": \"gelu_new\", \"layer_norm_epsilon\": 1e-05, "
                                "\"resid_pdrop\": 0.1, \"attn_pdrop\": 0.1, "
                                "\"scale_attn_weights\": true, \"tie_word_embeddings\": true, "
                                "\"scale_attn_by_inverse_layer_idx\": false, \"reorder_and_upcast_attn\": false");
  EXPECT_EQ(refusal(dir, gpt2), "");
  EXPECT_EQ(refusal(dir, with(gpt2, "\"gelu_new\"", "\"gelu_pytorch_tanh\"")), "");
  EXPECT_EQ(refusal(dir, with(gpt2, "\"n_inner\": null", "\"n_inner\": 32")), "");
  // Read, not refused: the model they describe is built.
  std::ofstream(file) << with(with(with(gpt2, "1e-05", "0.1"), "\"n_inner\": null", "\"n_inner\": 24"),
                              "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
  const GptConfig read = gpt_config_of(read_hf_config(file), file);
  EXPECT_FALSE(read.is_llama());
  EXPECT_EQ(read.norm_eps, 0.1f);
  EXPECT_EQ(read.mlp_hidden(), 24);
  EXPECT_FALSE(read.tied_head);
  const std::pair<std::string, std::string> cases[] = {
      {with(gpt2, "\"gelu_new\"", "\"relu\""), "field activation_function is '\"relu\"'"},
      {with(gpt2, "\"gelu_new\"", "\"gelu\""), "field activation_function is '\"gelu\"'"},
      {with(gpt2, "1e-05", "-1"), "field layer_norm_epsilon is '-1'"},
      {with(gpt2, "\"n_inner\": null", "\"n_inner\": 2.5"), "field n_inner is '2.5'"},
      {with(gpt2, "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": 1"), "field tie_word_embeddings is '1'"},
      {with(gpt2, "\"scale_attn_weights\": true", "\"scale_attn_weights\": false"),
       "field scale_attn_weights is 'false'"},
      {with(gpt2, "\"scale_attn_by_inverse_layer_idx\": false", "\"scale_attn_by_inverse_layer_idx\": true"),
       "field scale_attn_by_inverse_layer_idx is 'true'"},
      {with(gpt2, "\"n_ctx\": 4", "\"n_ctx\": 8"), "field n_ctx is '8'"},
      {with(gpt2, "\"n_ctx\": 4", "\"n_ctx\": 4, \"add_cross_attention\": true"),
       "field add_cross_attention is 'true'"}};
  for (const auto& [text, what] : cases) {
    const std::string e = refusal(dir, text);
    EXPECT_NE(e.find(file), std::string::npos) << what << " -> " << e;
    EXPECT_NE(e.find(what), std::string::npos) << what << " -> " << e;
    EXPECT_NE(e.find("Tessera's GPT-2 computes only"), std::string::npos) << what << " -> " << e;
  }
}

// LlamaConfig as transformers writes it for a small model.
const char* kLlama =
    R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 11, "hidden_size": 16,
        "intermediate_size": 24, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 4, "max_position_embeddings": 32, "rms_norm_eps": 1e-06, "rope_theta": 500000.0,
        "rope_scaling": null, "hidden_act": "silu", "attention_bias": false, "attention_dropout": 0.0,
        "mlp_bias": false, "pretraining_tp": 1, "tie_word_embeddings": false, "bos_token_id": 1})";

TEST(HfLlamaConfig, ReadsTheModelItDescribes) {
  testing::ScratchDir dir("hf_llama_config");
  std::ofstream(dir / "config.json") << kLlama;
  const GptConfig g = gpt_config_of(read_hf_config(dir / "config.json"), "config.json");
  EXPECT_TRUE(g.is_llama());
  EXPECT_EQ(g.to_string(), "L=2 C=16 NH=4 V=11 T=32 KV=2 F=24 rope=500000");
  EXPECT_EQ(g.norm_eps, 1e-6f);
  EXPECT_FALSE(g.tied_head);
}

TEST(HfLlamaConfig, ReadsTransformers5RopeParameters) {
  testing::ScratchDir dir("hf_llama_config");
  const std::string v5 = with(with(kLlama, "\"rope_theta\": 500000.0,", ""), "\"rope_scaling\": null,",
                              "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 250000.0},");
  std::ofstream(dir / "config.json") << v5;
  EXPECT_EQ(gpt_config_of(read_hf_config(dir / "config.json"), "config.json").rope_theta, 250000.0f);
  const std::string e =
      refusal(dir, with(v5, "\"rope_type\": \"default\"", "\"rope_type\": \"llama3\", \"factor\": 8.0"));
  EXPECT_NE(e.find("field rope_parameters.rope_type is '\"llama3\"'"), std::string::npos) << e;
}

TEST(HfModelConfig, FieldsTesseraDoesNotKnowAreRefusedByName) {
  testing::ScratchDir dir("hf_llama_config");
  const std::string e =
      refusal(dir, with(kLlama, "\"mlp_bias\": false", "\"mlp_bias\": false, \"sliding_window\": 4096"));
  EXPECT_NE(e.find("field sliding_window is '4096', not a LlamaConfig field Tessera knows"), std::string::npos) << e;
  const std::string g = refusal(dir, with(kValid, "\"n_head\": 2", "\"n_head\": 2, \"use_rotary\": true"));
  EXPECT_NE(g.find("field use_rotary is 'true', not a GPT2Config field Tessera knows"), std::string::npos) << g;
}

TEST(HfLlamaConfig, WrittenConfigReadsBack) {
  testing::ScratchDir dir("hf_llama_config");
  GptConfig g = GptConfig::llama(16, 32, 2, 4, 16, 2, 24);
  g.rope_theta = 250000.0f;
  g.norm_eps = 1e-6f;
  RunConfig model;
  add_gpt_config(model, g);
  write_hf_config(dir / "config.json", model, 11, DType::kBF16, 3);
  RunConfig expected = model;
  expected.set_model("vocab_size", 11);  // the exported rows
  EXPECT_EQ(read_hf_config(dir / "config.json").model(), expected.model());
}

TEST(HfLlamaConfig, FieldsTesseraDoesNotComputeAreRefused) {
  testing::ScratchDir dir("hf_llama_config");
  const std::string file = (dir / "config.json").string();
  const std::pair<std::string, std::string> cases[] = {
      {with(kLlama, "\"silu\"", "\"gelu\""), "field hidden_act is '\"gelu\"'"},
      {with(kLlama, "\"attention_bias\": false", "\"attention_bias\": true"), "field attention_bias is 'true'"},
      {with(kLlama, "\"mlp_bias\": false", "\"mlp_bias\": true"), "field mlp_bias is 'true'"},
      {with(kLlama, "\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}"),
       "field rope_scaling is"},
      {with(kLlama, "\"head_dim\": 4", "\"head_dim\": 8"), "field head_dim is '8'"},
      {with(kLlama, "\"pretraining_tp\": 1", "\"pretraining_tp\": 2"), "field pretraining_tp is '2'"}};
  for (const auto& [text, what] : cases) {
    const std::string e = refusal(dir, text);
    EXPECT_NE(e.find(file), std::string::npos) << what << " -> " << e;
    EXPECT_NE(e.find(what), std::string::npos) << what << " -> " << e;
    EXPECT_NE(e.find("Tessera's Llama computes only"), std::string::npos) << what << " -> " << e;
  }
  EXPECT_NE(refusal(dir, with(kLlama, "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3")).find("kv_heads"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera
