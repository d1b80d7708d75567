// GPT: a decoder-only transformer language model, in GPT-2's layout or Llama's. tokens (B,T) i32 ->
// logits (B,T,V) f32.
//
//   GPT-2  "embed" (wte, wpe: learned positions), "h.0" .. "h.{L-1}" TransformerBlocks (LayerNorm,
//          attention with biases, GELU MLP of ffn_dim, default 4C), "ln_f" LayerNorm, "head" LmHead
//          tied to embed.wte (or its own weight when tied_head is false)
//   Llama  "embed" (wte only), blocks with RMSNorm, rotary attention with kv_heads key/value heads
//          (grouped-query attention when fewer than heads) and no biases, SwiGLU MLP of ffn_dim,
//          "ln_f" RMSNorm, "head" LmHead with its own weight (unless tied_head)
//
// Initialisation: N(0, 0.02) weights, residual projections N(0, 0.02/sqrt(2L)), zero biases, unit
// norm scales.
//
// Tensor parallel (tp given; Megatron-LM's layout): the embedding and the head split by vocabulary
// rows, each block's attention by heads and its MLP by hidden features, the norms replicated (on this
// rank's token rows under sequence parallelism); forward returns this rank's columns of the logits
// (B,T,V/N), for a vocabulary-parallel CrossEntropyLoss. Every parameter keeps its name and holds
// its piece of the one-process model's tensor (Parameter::slice), with the same initial values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tessera/model/module.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

enum class GptArchitecture : std::uint8_t { kGpt2, kLlama };

const char* gpt_architecture_name(GptArchitecture architecture);  // "gpt2", "llama"
// Throws SettingError("model.architecture", ...) for anything but gpt2, llama.
GptArchitecture parse_gpt_architecture(const std::string& text);

struct GptConfig {
  std::int64_t vocab_size = 257;
  std::int64_t max_seq_len = 256;
  std::int64_t layers = 4;
  std::int64_t heads = 4;
  std::int64_t channels = 256;
  GptArchitecture architecture = GptArchitecture::kGpt2;
  std::int64_t kv_heads = 0;    // key/value heads (Llama); 0: as many as heads
  std::int64_t ffn_dim = 0;     // MLP hidden size; 0: the layout's default (default_ffn_dim)
  float rope_theta = 10000.0f;  // Llama: rotary base
  float norm_eps = 1e-5f;       // LayerNorm / RMSNorm epsilon
  bool tied_head = true;        // the LM head reads the token embedding's weight

  // A Llama config with its defaults (untied head, rope_theta 10000, RMSNorm eps 1e-5).
  static GptConfig llama(std::int64_t vocab_size, std::int64_t max_seq_len, std::int64_t layers, std::int64_t heads,
                         std::int64_t channels, std::int64_t kv_heads = 0, std::int64_t ffn_dim = 0);

  bool is_llama() const { return architecture == GptArchitecture::kLlama; }
  std::int64_t head_size() const { return channels / heads; }
  std::int64_t key_value_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  std::int64_t mlp_hidden() const { return ffn_dim > 0 ? ffn_dim : default_ffn_dim(); }
  // GPT-2: 4C. Llama: 8C/3 rounded up to a multiple of 256 (Llama's rule; 11008 at C = 4096 is the
  // 7B model's own choice, given as ffn_dim).
  std::int64_t default_ffn_dim() const;

  // Parameters of one block, and of the whole model (validated: the counts fit int64 with room).
  std::int64_t block_parameter_count() const;
  std::int64_t embedding_parameter_count() const;  // wte (+ wpe for GPT-2)
  std::int64_t head_parameter_count() const;       // ln_f, plus the head's own weight when untied
  std::int64_t parameter_count() const;

  // Throws SettingError ("model.layers", "model.channels", "model.kv_heads", ...) for sizes no such
  // model can have: non-positive sizes, channels not divisible by heads, heads not divisible by
  // kv_heads, an odd head size for rotary attention, and models of more than kMaxParameters
  // parameters (whose byte counts would overflow int64).
  void validate() const;
  static constexpr std::int64_t kMaxParameters = std::int64_t{1} << 56;  // 7.2e16
  // "L=4 C=256 NH=4 V=257 T=256"; Llama adds "KV=2 F=768 rope=10000" and "untied" where they apply.
  std::string to_string() const;
};

class Gpt final : public Module {
 public:
  explicit Gpt(const GptConfig& config, std::shared_ptr<TensorParallel> tp = nullptr);

  std::string type_name() const override { return "GPT"; }
  Tensor forward(Context& ctx, const Tensor& tokens) override;
  Tensor backward(Context& ctx, Tensor dlogits) override;

  const GptConfig& config() const { return config_; }
  // The tensor-parallel group the model is split over, or null.
  const std::shared_ptr<TensorParallel>& tensor_parallel() const { return tp_; }

 private:
  GptConfig config_;
  std::shared_ptr<TensorParallel> tp_;
  std::vector<ModuleSlot*> order_;  // embed, h.0.., ln_f, head: the forward order
};

}  // namespace tessera
