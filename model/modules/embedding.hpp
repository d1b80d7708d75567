// Embedding: token plus learned position embedding. tokens (B,T) i32 -> x (B,T,C) in the dtype of wte
// (the compute dtype: f32 or bf16).
// Parameters "wte" (V,C) and "wpe" (max_T,C); the LM head may tie its weight to wte. With max_seq_len
// 0 there is no "wpe" (a model whose positions come from rotary attention, as Llama's) and any T goes.
//
// Vocabulary-parallel (tp given): wte is split by rows over the group (piece sizes as
// tensor_slice.hpp's, so any vocabulary size goes), wpe replicated. Each rank looks up the tokens
// it holds (the others' rows read as zero; rank 0 adds the positions) and the partial sums are
// summed over the group: all-reduced, or reduce-scattered into this rank's token rows under
// sequence parallelism — the region exit of model/parallel/tensor_parallel.hpp. Forward also sets
// the group's token shape (B, T) for the region entries that follow.
#pragma once

#include <memory>

#include "tessera/model/module.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

class Embedding final : public Module {
 public:
  Embedding(std::int64_t vocab_size, std::int64_t max_seq_len, std::int64_t channels, float init_std = 0.02f,
            std::shared_ptr<TensorParallel> tp = nullptr);

  std::string type_name() const override { return "Embedding"; }
  Tensor forward(Context& ctx, const Tensor& tokens) override;
  // Returns an undefined tensor: token ids have no gradient.
  Tensor backward(Context& ctx, Tensor dy) override;

  Parameter& token_weight() { return wte_; }

 protected:
  void clear_own_saved() override { tokens_ = Tensor(); }

 private:
  std::shared_ptr<TensorParallel> tp_;  // null: not tensor parallel
  std::int64_t vocab_, max_seq_len_, channels_;
  Parameter& wte_;
  Parameter* wpe_ = nullptr;  // null without learned positions
  Tensor tokens_;             // (B,T) i32
};

}  // namespace tessera
