// MemoryCategory: what a tracked allocation is for. Planner predictions and engine measurements
// are both tables over these categories.
#pragma once

#include <array>
#include <cstddef>

namespace tessera {

enum class MemoryCategory : int {
  kParameters,      // model weights in their compute dtype (full or shard)
  kGradients,       // parameter gradients (full or shard, any dtype)
  kOptimizerState,  // fp32 master weights, Adam m and v
  kActivations,     // tensors kept from forward for backward, and activation gradients
  kCommBuffers,     // gathered parameters, reduce-scatter staging, checkpoint host copies
  kWorkspace,       // kernel scratch, logits, everything else transient
};

inline constexpr std::size_t kMemoryCategoryCount = 6;
inline constexpr std::array<MemoryCategory, kMemoryCategoryCount> kAllMemoryCategories = {
    MemoryCategory::kParameters,  MemoryCategory::kGradients,   MemoryCategory::kOptimizerState,
    MemoryCategory::kActivations, MemoryCategory::kCommBuffers, MemoryCategory::kWorkspace};

const char* memory_category_name(MemoryCategory category);  // "parameters", "gradients", ...

}  // namespace tessera
