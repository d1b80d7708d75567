// LmHead: logits = x W^T. x (B,T,C) -> (B,T,V). Tied (GPT-2): W is the token embedding's weight,
// which it reports through tied_parameters() and does not own. Untied (Llama): its own "weight" (V,C).
// Vocabulary-parallel (tp given): the weight (tied: the embedding's piece of wte; untied: its own,
// split by rows as wte is) gives this rank's columns of the logits (B,T,V/N), which the loss takes as
// they are (CrossEntropyLoss, vocabulary-parallel); the input enters the parallel region first
// (model/parallel/tensor_parallel.hpp), and under sequence parallelism the head keeps its rows
// (keeps_rows).
#pragma once

#include <memory>

#include "tessera/model/module.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

class LmHead final : public Module {
 public:
  // (V,C) (or this rank's rows of it), owned by the Embedding.
  explicit LmHead(Parameter& tied_weight, std::shared_ptr<const TensorParallel> tp = nullptr);
  // An untied head: weight (V,C) ~ N(0, init_std^2), decayed.
  LmHead(std::int64_t vocab_size, std::int64_t channels, float init_std,
         std::shared_ptr<const TensorParallel> tp = nullptr);

  std::string type_name() const override { return "LmHead"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dlogits) override;
  std::vector<Parameter*> tied_parameters() override {
    return tied_ ? std::vector<Parameter*>{&weight_} : std::vector<Parameter*>{};
  }

 protected:
  void clear_own_saved() override { input_ = Tensor(); }

 private:
  std::shared_ptr<const TensorParallel> tp_;  // null: not tensor parallel
  bool tied_;
  Parameter& weight_;
  Tensor input_;  // (B,T,C), or this rank's rows (1,B*T/N,C) under sequence parallelism
};

}  // namespace tessera
