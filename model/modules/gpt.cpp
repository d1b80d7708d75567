// GPT construction in either layout, config validation and parameter counts, and forward/backward
// over its children in order.
#include "tessera/model/modules/gpt.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "tessera/core/number_text.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/model/modules/embedding.hpp"
#include "tessera/model/modules/layer_norm.hpp"
#include "tessera/model/modules/lm_head.hpp"
#include "tessera/model/modules/rms_norm.hpp"
#include "tessera/model/modules/transformer_block.hpp"

namespace tessera {
namespace {

using Wide = unsigned __int128;

struct WideCounts {
  Wide block, embedding, head;
};

// The parameter counts in 128-bit arithmetic (each factor < 2^63, so no product of two overflows).
WideCounts wide_counts(const GptConfig& g) {
  const Wide c = static_cast<Wide>(g.channels), v = static_cast<Wide>(g.vocab_size);
  const Wide f = static_cast<Wide>(g.mlp_hidden());
  WideCounts n{};
  if (g.is_llama()) {
    const Wide kv_width = static_cast<Wide>(g.key_value_heads()) * static_cast<Wide>(g.head_size());
    n.block = c * (c + 2 * kv_width) + c * c + 3 * f * c + 2 * c;  // qkv, o, gate_up + down, two norms
    n.embedding = v * c;
    n.head = c;
  } else {
    n.block = 4 * c * c + 2 * c * f + 9 * c + f;  // qkv + proj (with biases), fc + proj, two LayerNorms
    n.embedding = v * c + static_cast<Wide>(g.max_seq_len) * c;
    n.head = 2 * c;
  }
  if (!g.tied_head) n.head += v * c;
  return n;
}

}  // namespace

const char* gpt_architecture_name(GptArchitecture architecture) {
  return architecture == GptArchitecture::kLlama ? "llama" : "gpt2";
}

GptArchitecture parse_gpt_architecture(const std::string& text) {
  if (text == "gpt2") return GptArchitecture::kGpt2;
  if (text == "llama") return GptArchitecture::kLlama;
  throw SettingError("model.architecture", text, "is not a model Tessera builds; use gpt2 or llama");
}

GptConfig GptConfig::llama(std::int64_t vocab_size, std::int64_t max_seq_len, std::int64_t layers, std::int64_t heads,
                           std::int64_t channels, std::int64_t kv_heads, std::int64_t ffn_dim) {
  GptConfig c;
  c.architecture = GptArchitecture::kLlama;
  c.vocab_size = vocab_size;
  c.max_seq_len = max_seq_len;
  c.layers = layers;
  c.heads = heads;
  c.channels = channels;
  c.kv_heads = kv_heads;
  c.ffn_dim = ffn_dim;
  c.tied_head = false;
  return c;
}

std::int64_t GptConfig::default_ffn_dim() const {
  if (!is_llama()) return 4 * channels;
  const std::int64_t two_thirds = (8 * channels + 2) / 3;  // ceil(8C / 3)
  return (two_thirds + 255) / 256 * 256;
}

std::int64_t GptConfig::block_parameter_count() const { return static_cast<std::int64_t>(wide_counts(*this).block); }
std::int64_t GptConfig::embedding_parameter_count() const {
  return static_cast<std::int64_t>(wide_counts(*this).embedding);
}
std::int64_t GptConfig::head_parameter_count() const { return static_cast<std::int64_t>(wide_counts(*this).head); }
std::int64_t GptConfig::parameter_count() const {
  return embedding_parameter_count() + layers * block_parameter_count() + head_parameter_count();
}

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
  if (kv_heads < 0) throw SettingError("model.kv_heads", std::to_string(kv_heads), "must be positive (0: as heads)");
  if (ffn_dim < 0) throw SettingError("model.ffn_dim", std::to_string(ffn_dim), "must be positive (0: the default)");
  if (!(norm_eps > 0.0f) || !std::isfinite(norm_eps)) {
    throw SettingError("model.norm_eps", shortest_number_text(norm_eps), "must be a positive number");
  }
  if (is_llama()) {
    if (heads % key_value_heads() != 0) {
      throw SettingError("model.kv_heads", std::to_string(kv_heads),
                         "does not divide the " + std::to_string(heads) +
                             " query heads; each key/value head serves the same number of query heads");
    }
    if (head_size() % 2 != 0) {
      throw SettingError("model.heads", std::to_string(heads),
                         "gives a head size of " + std::to_string(head_size()) + " (channels " +
                             std::to_string(channels) + " / heads); rotary attention needs an even head size");
    }
    if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta)) {
      throw SettingError("model.rope_theta", shortest_number_text(rope_theta), "must be a positive number");
    }
  } else if (kv_heads != 0 && kv_heads != heads) {
    throw SettingError("model.kv_heads", std::to_string(kv_heads),
                       "applies to Llama models; GPT-2 has as many key/value heads as heads");
  }
  const Wide limit = static_cast<Wide>(kMaxParameters);
  // Every size below 2^56 first, so the 128-bit products in wide_counts cannot overflow.
  const bool sizes_fit = static_cast<Wide>(ffn_dim) <= limit && static_cast<Wide>(vocab_size) <= limit &&
                         static_cast<Wide>(max_seq_len) <= limit && static_cast<Wide>(channels) <= limit;
  const WideCounts n = sizes_fit ? wide_counts(*this) : WideCounts{limit + 1, 0, 0};
  if (n.block > limit || n.embedding > limit || n.head > limit ||
      n.embedding + n.block * static_cast<Wide>(layers) + n.head > limit) {
    throw SettingError("model.layers", std::to_string(layers),
                       "with " + std::to_string(channels) + " channels the model has more than " +
                           std::to_string(kMaxParameters) +
                           " parameters, too large to build or plan (its byte counts would overflow 64-bit "
                           "integers); choose fewer layers or channels");
  }
}

std::string GptConfig::to_string() const {
  std::ostringstream s;
  s << "L=" << layers << " C=" << channels << " NH=" << heads << " V=" << vocab_size << " T=" << max_seq_len;
  if (is_llama()) s << " KV=" << key_value_heads() << " F=" << mlp_hidden() << " rope=" << rope_theta;
  if (ffn_dim > 0 && !is_llama()) s << " F=" << ffn_dim;
  const bool tied_by_default = !is_llama();  // GPT-2 ties its head, Llama does not
  if (tied_head != tied_by_default) s << (tied_head ? " tied" : " untied");
  return s.str();
}

Gpt::Gpt(const GptConfig& config, std::shared_ptr<TensorParallel> tp) : config_(config), tp_(std::move(tp)) {
  config_.validate();
  const GptConfig& c = config_;
  const float std = 0.02f;
  const float proj_std = 0.02f / std::sqrt(2.0f * static_cast<float>(c.layers));
  auto& embed = register_child(
      "embed", std::make_unique<Embedding>(c.vocab_size, c.is_llama() ? 0 : c.max_seq_len, c.channels, std, tp_));
  order_.push_back(&embed);
  TransformerBlockConfig block;
  block.channels = c.channels;
  block.heads = c.heads;
  block.init_std = std;
  block.proj_init_std = proj_std;
  block.llama = c.is_llama();
  block.kv_heads = c.key_value_heads();
  block.ffn_dim = c.mlp_hidden();
  block.rope_theta = c.rope_theta;
  block.norm_eps = c.norm_eps;
  block.tp = tp_;
  for (std::int64_t l = 0; l < c.layers; ++l) {
    order_.push_back(&register_child("h." + std::to_string(l), std::make_unique<TransformerBlock>(block)));
  }
  if (c.is_llama()) {
    order_.push_back(&register_child("ln_f", std::make_unique<RmsNorm>(c.channels, c.norm_eps, tp_)));
  } else {
    order_.push_back(&register_child("ln_f", std::make_unique<LayerNorm>(c.channels, c.norm_eps, tp_)));
  }
  auto& wte = static_cast<Embedding&>(*embed).token_weight();
  order_.push_back(&register_child("head", c.tied_head ? std::make_unique<LmHead>(wte, tp_)
                                                       : std::make_unique<LmHead>(c.vocab_size, c.channels, std, tp_)));
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
