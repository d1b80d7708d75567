// LmHead: logits = x W^T. x (B,T,C) -> (B,T,V). Tied (GPT-2): W is the token embedding's weight,
// which it reports through tied_parameters() and does not own. Untied (Llama): its own "weight" (V,C).
#pragma once

#include "tessera/model/module.hpp"

namespace tessera {

class LmHead final : public Module {
 public:
  explicit LmHead(Parameter& tied_weight);  // (V,C), owned by the Embedding
  // An untied head: weight (V,C) ~ N(0, init_std^2), decayed.
  LmHead(std::int64_t vocab_size, std::int64_t channels, float init_std);

  std::string type_name() const override { return "LmHead"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dlogits) override;
  std::vector<Parameter*> tied_parameters() override {
    return tied_ ? std::vector<Parameter*>{&weight_} : std::vector<Parameter*>{};
  }

 protected:
  void clear_own_saved() override { input_ = Tensor(); }

 private:
  bool tied_;
  Parameter& weight_;
  Tensor input_;  // (B,T,C)
};

}  // namespace tessera
