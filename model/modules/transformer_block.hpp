// TransformerBlock: GPT-2 pre-LN block. x (B,T,C) -> x + attn(ln_1(x)) -> (+ mlp(ln_2(.))) -> (B,T,C).
// Children: "ln_1", "attn", "ln_2", "mlp". Keeps nothing itself; its children keep what they need.
// RecomputeMode::kElementwise (selective recomputation): the children keep the matmul outputs (and
// attention its log-sum-exp) only, and backward recomputes the LayerNorm outputs (from the kept x and
// x1) and the GELU output.
#pragma once

#include "tessera/model/module.hpp"
#include "tessera/model/modules/recompute_mode.hpp"

namespace tessera {

struct TransformerBlockConfig {
  std::int64_t channels = 0;
  std::int64_t heads = 0;
  float init_std = 0.02f;       // matrices
  float proj_init_std = 0.02f;  // residual projections (attn.proj, mlp.proj)
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
