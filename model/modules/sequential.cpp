// Sequential: children's forward in order, backward in reverse, each through its slot.
#include "tessera/model/modules/sequential.hpp"

#include <stdexcept>

namespace tessera {

Sequential& Sequential::add(std::unique_ptr<Module> module, std::string name) {
  if (!module) throw std::invalid_argument("Sequential::add: module " + std::to_string(slots_.size()) + " is null");
  if (name.empty()) name = std::to_string(slots_.size());
  if (name.find('.') != std::string::npos) {
    throw std::invalid_argument("Sequential::add: child name '" + name +
                                "' holds a '.', the separator of full module names; choose a name without one");
  }
  for (const ModuleSlot* slot : slots_) {
    if (slot->name == name) {
      throw std::invalid_argument("Sequential::add: a child is already named '" + name +
                                  "'; give each child its own name");
    }
  }
  slots_.push_back(&register_child(std::move(name), std::move(module)));
  return *this;
}

Module& Sequential::at(std::size_t i) const {
  if (i >= slots_.size()) {
    throw std::out_of_range("Sequential::at(" + std::to_string(i) + "): it has " + std::to_string(slots_.size()) +
                            " children");
  }
  return **slots_[i];
}

Tensor Sequential::forward(Context& ctx, const Tensor& x) {
  Tensor y = x;
  for (ModuleSlot* slot : slots_) y = (*slot)->forward(ctx, y);
  return y;
}

Tensor Sequential::backward(Context& ctx, Tensor dy) {
  for (auto it = slots_.rbegin(); it != slots_.rend(); ++it) dy = (**it)->backward(ctx, std::move(dy));
  return dy;
}

}  // namespace tessera
