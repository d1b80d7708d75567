// SimTensor: a symbolic tensor for the memory planner. It has a shape, a dtype and a category but no
// data; creating one reports its bytes to a MemoryTracker and dropping the last copy reports the
// free, exactly as a Storage does. The planner's module shadows (sim_layers, sim_block) are written
// line by line like the real modules, so C++'s lifetime rules (locals, members kept for backward,
// temporaries destroyed at the end of their full expression) give the same allocation sequence,
// and the tracker's current and peak bytes are the ones the engine will measure.
#pragma once

#include <cstdint>
#include <memory>

#include "precision/dtype.hpp"
#include "runtime/memory_tracker.hpp"
#include "runtime/tensor.hpp"

namespace tessera {

class SimTensor {
 public:
  SimTensor() = default;  // undefined: holds nothing

  // Reports shape x dtype bytes to `tracker` under `category` until the last copy is dropped.
  // The tracker must outlive every copy.
  static SimTensor allocate(MemoryTracker& tracker, Shape shape, DType dtype, MemoryCategory category);

  bool defined() const { return block_ != nullptr; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(int i) const;  // negative i counts from the end
  std::int64_t numel() const { return shape_numel(shape_); }
  std::int64_t bytes() const;

 private:
  struct Block {
    Block(MemoryTracker& t, MemoryCategory c, std::int64_t b);
    ~Block();
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;
    MemoryTracker& tracker;
    MemoryCategory category;
    std::int64_t bytes;
  };

  std::shared_ptr<Block> block_;
  Shape shape_;
};

// What every shadow forward/backward receives: where the bytes are counted and the mode, as Context.
struct SimContext {
  explicit SimContext(MemoryTracker& m) : memory(m) {}

  MemoryTracker& memory;
  bool training = true;
};

// new_activation(): an f32 tensor in kActivations.
SimTensor sim_activation(SimContext& ctx, Shape shape);
// Tensor::empty(..., DType::kF32, MemoryCategory::kWorkspace).
SimTensor sim_workspace(SimContext& ctx, Shape shape);

}  // namespace tessera
