// stream_windows: one pass over a range of elements whose tensors live in memory or in an
// NvmeStore, window by window (one streamed block of elements at a time). Through a ring of
// `buffers` aligned buffer sets (3 or more), the read of window i+1, the work on window i and the write of
// window i-1 are in flight together:
//
//   read w0 | read w1  | read w2  | ...
//           | work w0  | work w1  | work w2 ...
//           |          | write w0 | write w1 ...
//
// A window's buffer set is reused only once its previous write has completed. With no store, or
// no slot in it, the whole range is one window on the resident memory (nothing is copied).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "tessera/runtime/offload/nvme_store.hpp"

namespace tessera {

// One tensor over the range: `count / elements_per_value` values of `value_bytes`.
struct StreamSlot {
  std::byte* resident = nullptr;      // in memory: the value of the range's first element
  const FileExtent* filed = nullptr;  // or in the store (its chunks are the windows)
  std::size_t value_bytes = 4;
  std::int64_t elements_per_value = 1;
  bool load = true;  // the work reads the window's values (filed: read before)
  bool save = true;  // the work changes them (filed: written back after)
};

// work(begin, count, data): elements [begin, begin + count) of the range; data[k] points at slot
// k's values of the window.
using WindowWork = std::function<void(std::int64_t begin, std::int64_t count, std::span<std::byte* const> data)>;

// Throws IoError when a transfer fails (after waiting for every transfer in flight).
void stream_windows(NvmeStore* store, std::span<const StreamSlot> slots, std::int64_t count, const WindowWork& work);

}  // namespace tessera
