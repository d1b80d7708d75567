// SimTensor: byte accounting of a symbolic tensor against a MemoryTracker.
#include "planning/sim_tensor.hpp"

#include <stdexcept>

namespace tessera {

SimTensor::Block::Block(MemoryTracker& t, MemoryCategory c, std::int64_t b) : tracker(t), category(c), bytes(b) {
  tracker.on_allocate(category, static_cast<std::size_t>(bytes));
}

SimTensor::Block::~Block() { tracker.on_free(category, static_cast<std::size_t>(bytes)); }

SimTensor SimTensor::allocate(MemoryTracker& tracker, Shape shape, DType dtype, MemoryCategory category) {
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("SimTensor: negative dimension in " + shape_string(shape));
  }
  SimTensor t;
  const std::int64_t bytes = shape_numel(shape) * static_cast<std::int64_t>(dtype_size(dtype));
  t.block_ = std::make_shared<Block>(tracker, category, bytes);
  t.shape_ = std::move(shape);
  return t;
}

std::int64_t SimTensor::dim(int i) const {
  const int n = static_cast<int>(shape_.size());
  const int at = i < 0 ? n + i : i;
  if (at < 0 || at >= n) throw std::out_of_range("SimTensor::dim " + std::to_string(i) + " of " + shape_string(shape_));
  return shape_[static_cast<std::size_t>(at)];
}

std::int64_t SimTensor::bytes() const { return block_ ? block_->bytes : 0; }

SimTensor sim_activation(SimContext& ctx, Shape shape) {
  return SimTensor::allocate(ctx.memory, std::move(shape), DType::kF32, MemoryCategory::kActivations);
}

SimTensor sim_workspace(SimContext& ctx, Shape shape) {
  return SimTensor::allocate(ctx.memory, std::move(shape), DType::kF32, MemoryCategory::kWorkspace);
}

}  // namespace tessera
