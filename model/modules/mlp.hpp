// MLP: the transformer feed-forward block. x (B,T,C) -> fc (B,T,4C) -> GELU(tanh) -> proj (B,T,C).
// Children: "fc" Linear(C, 4C), "proj" Linear(4C, C) (init std scaled for the residual path).
// RecomputeMode::kElementwise keeps only the fc output: backward_with_input recomputes the GELU
// output and takes the input x again from the caller (the fc layer did not keep it).
#pragma once

#include "tessera/model/module.hpp"
#include "tessera/model/modules/recompute_mode.hpp"

namespace tessera {

class Mlp final : public ElementwiseRecomputable {
 public:
  Mlp(std::int64_t channels, float init_std, float proj_init_std);

  std::string type_name() const override { return "MLP"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;
  Tensor backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) override;

 protected:
  void clear_own_saved() override { pre_gelu_ = Tensor(); }

 private:
  std::int64_t channels_;
  ModuleSlot& fc_;
  ModuleSlot& proj_;
  Tensor pre_gelu_;  // (B,T,4C)
};

}  // namespace tessera
