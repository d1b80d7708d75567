// LmHead: logits = x wte^T with the weight tied to the token embedding (GPT-2). x (B,T,C) -> (B,T,V).
// Owns no parameter: it reports the embedding's weight through tied_parameters().
#pragma once

#include "tessera/model/module.hpp"

namespace tessera {

class LmHead final : public Module {
 public:
  explicit LmHead(Parameter& tied_weight);  // (V,C), owned by the Embedding

  std::string type_name() const override { return "LmHead"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dlogits) override;
  std::vector<Parameter*> tied_parameters() override { return {&weight_}; }

 protected:
  void clear_own_saved() override { input_ = Tensor(); }

 private:
  Parameter& weight_;
  Tensor input_;  // (B,T,C)
};

}  // namespace tessera
