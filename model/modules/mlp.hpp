// MLP: the transformer feed-forward block. x (B,T,C) -> fc (B,T,F) -> GELU(tanh) -> proj (B,T,C),
// F the hidden size (4C by default). Children: "fc" Linear(C, F), "proj" Linear(F, C) (init std
// scaled for the residual path).
// RecomputeMode::kElementwise keeps only the fc output: backward_with_input recomputes the GELU
// output and takes the input x again from the caller (the fc layer did not keep it).
// Tensor parallel (tp given): fc column-parallel (F / N hidden features per rank), proj
// row-parallel, inside one parallel region (model/parallel/tensor_parallel.hpp); under sequence
// parallelism it keeps its input's rows, not the gathered input (keeps_rows).
#pragma once

#include <memory>

#include "tessera/model/module.hpp"
#include "tessera/model/modules/recompute_mode.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

class Mlp final : public ElementwiseRecomputable {
 public:
  // hidden 0: 4 * channels.
  Mlp(std::int64_t channels, float init_std, float proj_init_std, std::int64_t hidden = 0,
      std::shared_ptr<const TensorParallel> tp = nullptr);

  std::string type_name() const override { return "MLP"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;
  Tensor backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) override;

 protected:
  void clear_own_saved() override {
    pre_gelu_ = Tensor();
    rows_ = Tensor();
  }

 private:
  std::shared_ptr<const TensorParallel> tp_;  // null: not tensor parallel
  std::int64_t channels_;
  ModuleSlot& fc_;
  ModuleSlot& proj_;
  Tensor pre_gelu_;  // (B,T,F)
  Tensor rows_;      // sequence parallel: this rank's input rows (1,B*T/N,C), gathered again in backward
};

}  // namespace tessera
