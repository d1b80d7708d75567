// TransformerBlock: GPT-2 pre-LN block. x (B,T,C) -> x + attn(ln_1(x)) -> (+ mlp(ln_2(.))) -> (B,T,C).
// Children: "ln_1", "attn", "ln_2", "mlp". Keeps nothing itself; its children keep what they need.
#pragma once

#include "runtime/module.hpp"

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
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  ModuleSlot& ln_1_;
  ModuleSlot& attn_;
  ModuleSlot& ln_2_;
  ModuleSlot& mlp_;
};

}  // namespace tessera
