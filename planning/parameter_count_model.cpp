// ParameterCountModel: a flat parameter of a given size under a child named "model".
#include "tessera/planning/parameter_count_model.hpp"

#include <stdexcept>

namespace tessera {
namespace {

class FlatWeights final : public Module {
 public:
  explicit FlatWeights(std::int64_t n) { register_parameter("weight", {n}, ParameterInit::zeros(), true); }
  std::string type_name() const override { return "FlatWeights"; }
  Tensor forward(Context&, const Tensor&) override { throw std::logic_error("FlatWeights has no forward"); }
  Tensor backward(Context&, Tensor) override { throw std::logic_error("FlatWeights has no backward"); }
};

}  // namespace

ParameterCountModel::ParameterCountModel(std::int64_t parameters) {
  register_child("model", std::make_unique<FlatWeights>(parameters));
}

Tensor ParameterCountModel::forward(Context&, const Tensor&) {
  throw std::logic_error("a model given by its parameter count has no architecture to run");
}

Tensor ParameterCountModel::backward(Context&, Tensor) {
  throw std::logic_error("a model given by its parameter count has no architecture to run");
}

}  // namespace tessera
