// GPT: GPT-2 layout language model. tokens (B,T) i32 -> logits (B,T,V) f32.
// Children: "embed" (wte, wpe), "h.0" .. "h.{L-1}" TransformerBlocks, "ln_f" LayerNorm, "head" LmHead
// tied to embed.wte. Initialisation: N(0, 0.02) weights, residual projections N(0, 0.02/sqrt(2L)),
// zero biases, unit LayerNorm scales.
#pragma once

#include <string>

#include "tessera/model/module.hpp"

namespace tessera {

struct GptConfig {
  std::int64_t vocab_size = 257;
  std::int64_t max_seq_len = 256;
  std::int64_t layers = 4;
  std::int64_t heads = 4;
  std::int64_t channels = 256;

  // Throws SettingError ("model.layers", "model.channels", ...) for sizes no GPT can have.
  // Throws SettingError for non-positive sizes, channels not divisible by heads, and models of more
  // than kMaxParameters parameters (whose byte counts would overflow int64).
  void validate() const;
  static constexpr std::int64_t kMaxParameters = std::int64_t{1} << 56;  // 7.2e16
  std::string to_string() const;                                         // "L=4 C=256 NH=4 V=257 T=256"
};

class Gpt final : public Module {
 public:
  explicit Gpt(const GptConfig& config);

  std::string type_name() const override { return "GPT"; }
  Tensor forward(Context& ctx, const Tensor& tokens) override;
  Tensor backward(Context& ctx, Tensor dlogits) override;

  const GptConfig& config() const { return config_; }

 private:
  GptConfig config_;
  std::vector<ModuleSlot*> order_;  // embed, h.0.., ln_f, head: the forward order
};

}  // namespace tessera
