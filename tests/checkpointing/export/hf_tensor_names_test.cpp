// Tessera <-> Hugging Face names and layouts: every GPT-2 and Llama parameter kind maps to its
// Hugging Face name(s); GPT-2's Linear weights are transposed to Conv1D (in, out) and back; Llama's
// fused qkv and gate_up are split into q/k/v_proj and gate/up_proj row blocks and put back; the
// token embedding and an untied head are cut to the vocabulary and padded back with zero rows; names
// outside the layout have no mapping.
#include "tessera/checkpointing/export/hf_tensor_names.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace tessera {
namespace {

std::string only_name(GptArchitecture a, const std::string& name, const Shape& shape = {4, 4}) {
  const std::vector<HfTensorName> hf = hf_tensor_names(a, name, shape);
  return hf.size() == 1 ? hf[0].name : "(" + std::to_string(hf.size()) + " tensors)";
}

TEST(HfGpt2Names, EveryParameterKindMaps) {
  const std::pair<const char*, const char*> names[] = {{"embed.wte", "transformer.wte.weight"},
                                                       {"embed.wpe", "transformer.wpe.weight"},
                                                       {"h.0.ln_1.weight", "transformer.h.0.ln_1.weight"},
                                                       {"h.11.ln_2.bias", "transformer.h.11.ln_2.bias"},
                                                       {"h.3.attn.qkv.weight", "transformer.h.3.attn.c_attn.weight"},
                                                       {"h.3.attn.qkv.bias", "transformer.h.3.attn.c_attn.bias"},
                                                       {"h.3.attn.proj.weight", "transformer.h.3.attn.c_proj.weight"},
                                                       {"h.3.mlp.fc.weight", "transformer.h.3.mlp.c_fc.weight"},
                                                       {"h.3.mlp.proj.bias", "transformer.h.3.mlp.c_proj.bias"},
                                                       {"ln_f.weight", "transformer.ln_f.weight"},
                                                       {"ln_f.bias", "transformer.ln_f.bias"},
                                                       {"head.weight", "lm_head.weight"}};
  for (const auto& [ours, theirs] : names) {
    const std::vector<HfTensorName> hf = hf_tensor_names(GptArchitecture::kGpt2, ours, {4, 4});
    ASSERT_EQ(hf.size(), 1u) << ours;
    EXPECT_EQ(hf[0].name, theirs) << ours;
    const std::string s = ours;
    const bool linear_weight = s.find(".weight") != std::string::npos && s.find("ln_") == std::string::npos &&
                               s.rfind("embed.", 0) != 0 && s != "head.weight";
    EXPECT_EQ(hf[0].transposed, linear_weight) << ours;
    EXPECT_EQ(hf[0].vocab_rows, s == "embed.wte" || s == "head.weight") << ours;
  }
  for (const char* other : {"h.0.attn.rope.weight", "h.x", "h.1x.ln_1.weight", "embed.other", "h.1.mlp.fc.scale"}) {
    EXPECT_TRUE(hf_tensor_names(GptArchitecture::kGpt2, other, {4, 4}).empty()) << other;
  }
}

TEST(HfGpt2Names, LinearWeightsBecomeConv1DAndBack) {
  const HfTensorName hf = hf_tensor_names(GptArchitecture::kGpt2, "h.0.mlp.fc.weight", {3, 2}).at(0);
  const Shape shape{3, 2};                       // (out, in)
  const std::vector<float> w{1, 2, 3, 4, 5, 6};  // rows (1 2) (3 4) (5 6)
  EXPECT_EQ(hf_shape(hf, shape, 0), (Shape{2, 3}));
  const std::vector<float> conv = to_hf_layout(hf, shape, w, 0);
  EXPECT_EQ(conv, (std::vector<float>{1, 3, 5, 2, 4, 6}));
  std::vector<float> back(6);
  place_from_hf(hf, shape, {2, 3}, conv, back);
  EXPECT_EQ(back, w);
}

TEST(HfGpt2Names, TheTokenEmbeddingLosesAndRegainsItsPaddingRows) {
  const HfTensorName hf = hf_tensor_names(GptArchitecture::kGpt2, "embed.wte", {4, 2}).at(0);
  const Shape shape{4, 2};  // 3 tokens, 1 padding row
  const std::vector<float> wte{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(hf_shape(hf, shape, 3), (Shape{3, 2}));
  const std::vector<float> cut = to_hf_layout(hf, shape, wte, 3);
  EXPECT_EQ(cut, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  std::vector<float> back(8, 0.0f);
  place_from_hf(hf, shape, {3, 2}, cut, back);
  EXPECT_EQ(back, (std::vector<float>{1, 2, 3, 4, 5, 6, 0, 0}));
}

TEST(HfLlamaNames, EveryParameterKindMaps) {
  const GptArchitecture llama = GptArchitecture::kLlama;
  EXPECT_EQ(only_name(llama, "embed.wte"), "model.embed_tokens.weight");
  EXPECT_EQ(only_name(llama, "h.7.ln_1.weight"), "model.layers.7.input_layernorm.weight");
  EXPECT_EQ(only_name(llama, "h.7.ln_2.weight"), "model.layers.7.post_attention_layernorm.weight");
  EXPECT_EQ(only_name(llama, "h.7.attn.proj.weight"), "model.layers.7.self_attn.o_proj.weight");
  EXPECT_EQ(only_name(llama, "h.7.mlp.down.weight"), "model.layers.7.mlp.down_proj.weight");
  EXPECT_EQ(only_name(llama, "ln_f.weight"), "model.norm.weight");
  EXPECT_EQ(only_name(llama, "head.weight"), "lm_head.weight");
  for (const char* other : {"embed.wpe", "h.0.ln_1.bias", "h.0.mlp.fc.weight", "h.0.attn.qkv.bias"}) {
    EXPECT_TRUE(hf_tensor_names(llama, other, {4, 4}).empty()) << other;
  }
}

TEST(HfLlamaNames, FusedProjectionsSplitIntoRowBlocksAndBack) {
  // qkv of C = 4 with 2 key/value rows each: (4 + 2 + 2, 4).
  const Shape shape{8, 4};
  std::vector<float> qkv(32);
  std::iota(qkv.begin(), qkv.end(), 0.0f);
  const std::vector<HfTensorName> hf = hf_tensor_names(GptArchitecture::kLlama, "h.0.attn.qkv.weight", shape);
  ASSERT_EQ(hf.size(), 3u);
  EXPECT_EQ(hf[0].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(hf[1].name, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(hf[2].name, "model.layers.0.self_attn.v_proj.weight");
  EXPECT_EQ(hf_shape(hf[0], shape, 0), (Shape{4, 4}));
  EXPECT_EQ(hf_shape(hf[1], shape, 0), (Shape{2, 4}));
  EXPECT_EQ(to_hf_layout(hf[1], shape, qkv, 0), (std::vector<float>{16, 17, 18, 19, 20, 21, 22, 23}));
  std::vector<float> back(32, -1.0f);
  for (const HfTensorName& piece : hf) {
    place_from_hf(piece, shape, hf_shape(piece, shape, 0), to_hf_layout(piece, shape, qkv, 0), back);
  }
  EXPECT_EQ(back, qkv);

  const std::vector<HfTensorName> mlp = hf_tensor_names(GptArchitecture::kLlama, "h.2.mlp.gate_up.weight", {6, 4});
  ASSERT_EQ(mlp.size(), 2u);
  EXPECT_EQ(mlp[0].name, "model.layers.2.mlp.gate_proj.weight");
  EXPECT_EQ(mlp[1].name, "model.layers.2.mlp.up_proj.weight");
  EXPECT_EQ(hf_shape(mlp[1], {6, 4}, 0), (Shape{3, 4}));
  EXPECT_EQ(mlp[1].row_begin, 3);
}

}  // namespace
}  // namespace tessera
