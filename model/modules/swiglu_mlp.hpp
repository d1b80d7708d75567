// SwiGluMlp: Llama's feed-forward block. x (B,T,C) -> gate_up (B,T,2F) = [gate | up] ->
// silu(gate) * up (B,T,F) -> down (B,T,C). Children: "gate_up" Linear(C, 2F) (Hugging Face's
// gate_proj rows then up_proj rows), "down" Linear(F, C) (init std scaled for the residual path), no
// biases. Kept for backward: the gate_up output. RecomputeMode::kElementwise keeps only that:
// backward_with_input recomputes the SwiGLU output and takes x again from the caller.
// Tensor parallel (tp given): gate_up column-parallel (this rank's F / N features of the gate and of
// up), down row-parallel, inside one parallel region (model/parallel/tensor_parallel.hpp); under
// sequence parallelism it keeps its input's rows, not the gathered input (keeps_rows).
#pragma once

#include <memory>

#include "tessera/model/module.hpp"
#include "tessera/model/modules/recompute_mode.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

class SwiGluMlp final : public ElementwiseRecomputable {
 public:
  SwiGluMlp(std::int64_t channels, std::int64_t hidden, float init_std, float proj_init_std,
            std::shared_ptr<const TensorParallel> tp = nullptr);

  std::string type_name() const override { return "SwiGLU"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;
  Tensor backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) override;

 protected:
  void clear_own_saved() override {
    gate_up_out_ = Tensor();
    rows_ = Tensor();
  }

 private:
  // silu(gate) * up (..., F) from a gate_up output (..., 2F).
  Tensor activation(Context& ctx, const Tensor& gate_up) const;
  // dgate_up (..., 2F) from the gradient of the activation; drops the kept gate_up output.
  Tensor activation_grad(Context& ctx, const Tensor& dh);

  std::shared_ptr<const TensorParallel> tp_;  // null: not tensor parallel
  std::int64_t channels_;
  std::int64_t hidden_;  // F, or this rank's F / N
  ModuleSlot& gate_up_;
  ModuleSlot& down_;
  Tensor gate_up_out_;  // (B,T,2F)
  Tensor rows_;         // sequence parallel: this rank's input rows (1,B*T/N,C), gathered again in backward
};

}  // namespace tessera
