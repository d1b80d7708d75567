// Tessera <-> Hugging Face GPT-2 names and layouts: every parameter kind maps to its Hugging Face
// name, Linear weights are transposed to Conv1D (in, out) and back, the token embedding is cut to
// the vocabulary and padded back with zero rows, names outside GPT-2 have no mapping.
#include "tessera/checkpointing/export/hf_gpt2_names.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

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
                                                       {"ln_f.bias", "transformer.ln_f.bias"}};
  for (const auto& [ours, theirs] : names) {
    const auto hf = hf_gpt2_name(ours);
    ASSERT_TRUE(hf.has_value()) << ours;
    EXPECT_EQ(hf->name, theirs) << ours;
    const std::string s = ours;
    const bool linear_weight =
        s.find(".weight") != std::string::npos && s.find("ln_") == std::string::npos && s.rfind("embed.", 0) != 0;
    EXPECT_EQ(hf->transposed, linear_weight) << ours;
    EXPECT_EQ(hf->vocab_rows, s == "embed.wte") << ours;
  }
  for (const char* other : {"head.weight", "h.0.attn.rope.weight", "h.x", "embed.other", "h.1.mlp.fc.scale"}) {
    EXPECT_FALSE(hf_gpt2_name(other).has_value()) << other;
  }
}

TEST(HfGpt2Names, LinearWeightsBecomeConv1DAndBack) {
  const HfTensorName hf = *hf_gpt2_name("h.0.mlp.fc.weight");
  const Shape shape{3, 2};                       // (out, in)
  const std::vector<float> w{1, 2, 3, 4, 5, 6};  // rows (1 2) (3 4) (5 6)
  EXPECT_EQ(hf_shape(hf, shape, 0), (Shape{2, 3}));
  const std::vector<float> conv = to_hf_layout(hf, shape, w, 0);
  EXPECT_EQ(conv, (std::vector<float>{1, 3, 5, 2, 4, 6}));
  EXPECT_EQ(from_hf_layout(hf, shape, {2, 3}, conv), w);
}

TEST(HfGpt2Names, TheTokenEmbeddingLosesAndRegainsItsPaddingRows) {
  const HfTensorName hf = *hf_gpt2_name("embed.wte");
  const Shape shape{4, 2};  // 3 tokens, 1 padding row
  const std::vector<float> wte{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(hf_shape(hf, shape, 3), (Shape{3, 2}));
  const std::vector<float> cut = to_hf_layout(hf, shape, wte, 3);
  EXPECT_EQ(cut, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(from_hf_layout(hf, shape, {3, 2}, cut), (std::vector<float>{1, 2, 3, 4, 5, 6, 0, 0}));
}

}  // namespace
}  // namespace tessera
