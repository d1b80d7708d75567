// GPT construction, config validation, and forward/backward over its children in order.
#include "tessera/model/modules/gpt.hpp"

#include <cmath>
#include <stdexcept>

#include "tessera/core/setting_error.hpp"
#include "tessera/model/modules/embedding.hpp"
#include "tessera/model/modules/layer_norm.hpp"
#include "tessera/model/modules/lm_head.hpp"
#include "tessera/model/modules/transformer_block.hpp"

namespace tessera {

void GptConfig::validate() const {
  auto positive = [](std::int64_t v, const char* setting) {
    if (v <= 0) throw SettingError(setting, std::to_string(v), "must be positive");
  };
  positive(vocab_size, "model.vocab_size");
  positive(max_seq_len, "model.seq_len");
  positive(layers, "model.layers");
  positive(heads, "model.heads");
  positive(channels, "model.channels");
  if (channels % heads != 0) {
    throw SettingError(
        "model.channels", std::to_string(channels),
        "is not divisible by the " + std::to_string(heads) + " heads; choose channels that are a multiple of heads");
  }
  // Parameter count in 128-bit arithmetic (each factor < 2^63, so no product of two overflows it),
  // bounded so that every byte count derived from it (bytes per parameter x parameters, over ranks)
  // stays far inside int64.
  using Wide = unsigned __int128;
  const Wide limit = static_cast<Wide>(kMaxParameters);
  const Wide c = static_cast<Wide>(channels);
  const Wide per_layer = 12 * c * c + 13 * c;
  const Wide count = static_cast<Wide>(vocab_size) * c + static_cast<Wide>(max_seq_len) * c +
                     (per_layer > limit ? per_layer : per_layer * static_cast<Wide>(layers)) + 2 * c;
  if (per_layer > limit || count > limit) {
    throw SettingError("model.layers", std::to_string(layers),
                       "with " + std::to_string(channels) + " channels the model has more than " +
                           std::to_string(kMaxParameters) +
                           " parameters, too large to build or plan (its byte counts would overflow 64-bit "
                           "integers); choose fewer layers or channels");
  }
}

std::string GptConfig::to_string() const {
  return "L=" + std::to_string(layers) + " C=" + std::to_string(channels) + " NH=" + std::to_string(heads) +
         " V=" + std::to_string(vocab_size) + " T=" + std::to_string(max_seq_len);
}

Gpt::Gpt(const GptConfig& config) : config_(config) {
  config_.validate();
  const float std = 0.02f;
  const float proj_std = 0.02f / std::sqrt(2.0f * static_cast<float>(config.layers));
  auto& embed =
      register_child("embed", std::make_unique<Embedding>(config.vocab_size, config.max_seq_len, config.channels, std));
  order_.push_back(&embed);
  for (std::int64_t l = 0; l < config.layers; ++l) {
    order_.push_back(&register_child(
        "h." + std::to_string(l),
        std::make_unique<TransformerBlock>(TransformerBlockConfig{config.channels, config.heads, std, proj_std})));
  }
  order_.push_back(&register_child("ln_f", std::make_unique<LayerNorm>(config.channels)));
  auto& wte = static_cast<Embedding&>(*embed).token_weight();
  order_.push_back(&register_child("head", std::make_unique<LmHead>(wte)));
}

Tensor Gpt::forward(Context& ctx, const Tensor& tokens) {
  Tensor x = tokens;
  for (ModuleSlot* slot : order_) x = (*slot)->forward(ctx, x);
  return x;
}

Tensor Gpt::backward(Context& ctx, Tensor dlogits) {
  Tensor d = std::move(dlogits);  // each step hands its gradient on, so the (B,T,V) one dies first
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) d = (**it)->backward(ctx, std::move(d));
  return d;
}

}  // namespace tessera
