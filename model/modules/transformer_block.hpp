// TransformerBlock: a pre-norm block. x (B,T,C) -> x + attn(ln_1(x)) -> (+ mlp(ln_2(.))) -> (B,T,C).
// Children: "ln_1", "attn", "ln_2", "mlp". Keeps nothing itself; its children keep what they need.
// GPT-2: LayerNorms, CausalSelfAttention with biases, GELU MLP. Llama: RMSNorms, rotary
// CausalSelfAttention with kv_heads key/value heads and no biases, SwiGLU MLP.
// RecomputeMode::kElementwise (selective recomputation): the children keep the matmul outputs (and
// attention its log-sum-exp) only, and backward recomputes the LayerNorm outputs (from the kept x and
// x1) and the GELU output.
// Tensor parallel (config.tp): the attention and MLP split over the group, the norms replicated
// (on this rank's token rows under sequence parallelism); the block itself is unchanged.
#pragma once

#include <memory>

#include "tessera/model/module.hpp"
#include "tessera/model/modules/recompute_mode.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

struct TransformerBlockConfig {
  std::int64_t channels = 0;
  std::int64_t heads = 0;
  float init_std = 0.02f;       // matrices
  float proj_init_std = 0.02f;  // residual projections (attn.proj, mlp.proj)
  bool llama = false;           // Llama's layout instead of GPT-2's
  std::int64_t kv_heads = 0;    // Llama: key/value heads (0: heads)
  std::int64_t ffn_dim = 0;     // MLP hidden size (0: GPT-2's 4C; required for Llama)
  float rope_theta = 10000.0f;  // Llama: rotary base
  float norm_eps = 1e-5f;
  std::shared_ptr<const TensorParallel> tp;  // null: not tensor parallel
};

class TransformerBlock final : public Module {
 public:
  explicit TransformerBlock(const TransformerBlockConfig& config);

  std::string type_name() const override { return "TransformerBlock"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

  // Sets the mode of this block and of its attn and mlp children, which must not be wrapped
  // (throws std::invalid_argument naming the child otherwise).
  void set_recompute(RecomputeMode mode);
  RecomputeMode recompute() const { return recompute_; }

 private:
  Tensor backward_recomputing(Context& ctx, const Tensor& dy);

  ModuleSlot& ln_1_;
  ModuleSlot& attn_;
  ModuleSlot& ln_2_;
  ModuleSlot& mlp_;
  RecomputeMode recompute_ = RecomputeMode::kKeepAll;
};

}  // namespace tessera
