// CausalSelfAttention: multi-head self-attention with a causal mask, GPT-2 layout.
// x (B,T,C) -> qkv = x W_qkv^T (B,T,3C) -> per-head softmax(q k^T / sqrt(C/NH)) v -> proj -> (B,T,C), in the
// compute dtype (the layers' weights' dtype); the softmax statistics (B,NH,T) f32.
// Children: "qkv" Linear(C, 3C), "proj" Linear(C, C) (its init std scaled for the residual path).
// Kept for backward: qkv, the attention output (the proj layer's input, the same tensor) and the
// (B,NH,T) log-sum-exp of each row of scores: the attention kernels are tiled and recompute the
// probabilities, so nothing (B,NH,T,T) is kept. RecomputeMode::kElementwise keeps the same but not
// the input x (the qkv layer's input): backward_with_input takes x again from the caller.
//
// Rotary (Llama): the qkv layer (no bias) projects to (B,T,(NH+2*KV)*hs) — NH query heads, KV
// key/value heads — and rotary_qkv_forward rotates q and k by position and repeats each key/value
// head for its NH/KV query heads into the (B,T,3C) layout the attention kernels read, which is
// what is kept; proj has no bias either.
//
// Tensor parallel (tp given): the heads (and Llama's key/value heads) are divided over the group,
// each rank computing its own heads: qkv is column-parallel (this rank's heads of each of q, k and
// v), proj row-parallel; forward enters the parallel region before qkv and leaves it after proj
// (model/parallel/tensor_parallel.hpp). A head count the group's size does not divide is refused.
// Under sequence parallelism it keeps its input's rows, not the gathered input (keeps_rows).
#pragma once

#include <memory>

#include "tessera/model/module.hpp"
#include "tessera/model/modules/recompute_mode.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

struct RotaryAttentionOptions {
  std::int64_t kv_heads = 0;  // key/value heads; 0: as many as heads
  float theta = 10000.0f;     // rotary base
};

class CausalSelfAttention final : public ElementwiseRecomputable {
 public:
  CausalSelfAttention(std::int64_t channels, std::int64_t heads, float init_std, float proj_init_std,
                      std::shared_ptr<const TensorParallel> tp = nullptr);
  CausalSelfAttention(std::int64_t channels, std::int64_t heads, float init_std, float proj_init_std,
                      const RotaryAttentionOptions& rotary, std::shared_ptr<const TensorParallel> tp = nullptr);

  std::string type_name() const override { return "CausalSelfAttention"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;
  Tensor backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) override;

 protected:
  void clear_own_saved() override;

 private:
  // The gradient of the qkv layer's output from the gradient of the attention output (B,T,C):
  // dqkv (B,T,3C), taken through the rotary op's backward when rotary; drops what forward kept.
  Tensor attention_grad(Context& ctx, const Tensor& datt);

  std::shared_ptr<const TensorParallel> tp_;  // null: not tensor parallel
  std::int64_t channels_;                     // the model's width C (the input's and output's last dimension)
  std::int64_t heads_;                        // the heads this rank computes (all of them unless tensor parallel)
  bool rotary_ = false;
  std::int64_t kv_heads_;  // this rank's key/value heads
  float theta_ = 0.0f;
  std::int64_t width_;  // heads_ x head size: the attention kernels' c
  ModuleSlot& qkv_;
  ModuleSlot& proj_;
  Tensor qkv_out_;  // (B,T,3 width): the qkv layer's output, or the rotary op's
  Tensor att_;      // (B,T,width) the attention output
  Tensor lse_;      // (B,heads,T) f32 log-sum-exp of each row of scores
  Tensor rows_;     // sequence parallel: this rank's input rows (1,B*T/N,C), gathered again in backward
};

}  // namespace tessera
