// OutOfMemoryError's message.
#include "tessera/runtime/out_of_memory.hpp"

#include "tessera/runtime/memory_tracker.hpp"

namespace tessera {

std::string out_of_memory_message(const std::string& device, const std::string& memory_kind, const std::string& what,
                                  std::size_t bytes, std::int64_t in_use, std::int64_t peak) {
  return device + ": out of memory allocating " + format_bytes(static_cast<std::int64_t>(bytes)) + " (" +
         std::to_string(bytes) + " bytes) of " + memory_kind + " memory for " + what + ", with " +
         format_bytes(in_use) + " already allocated (peak " + format_bytes(peak) +
         "). Make the micro-batch or sequence smaller, recompute activations (activation checkpointing), "
         "shard the state over more ranks (a higher ZeRO stage) or offload it; the planner predicts the peak "
         "before a run.";
}

}  // namespace tessera
