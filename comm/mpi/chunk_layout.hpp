// ChunkLayout: which contiguous element range of a buffer each rank reduces (reduce-scatter phase)
// and then hands to everyone (all-gather phase). reduce_scatter and all_gather use equal chunks;
// all_reduce splits any count into near-equal chunks (the first count % size ranks get one more).
// Worked out from two numbers instead of stored per rank, so a collective allocates nothing for it.
#pragma once

#include <algorithm>
#include <cstddef>

namespace tessera::detail {

struct ChunkLayout {
  std::size_t base = 0;   // elements of every rank's chunk
  std::size_t extra = 0;  // ranks 0 .. extra-1 have one element more

  std::size_t count(int rank) const { return base + (static_cast<std::size_t>(rank) < extra ? 1 : 0); }
  std::size_t offset(int rank) const {
    const auto r = static_cast<std::size_t>(rank);
    return r * base + std::min(r, extra);
  }
};

ChunkLayout equal_chunks(std::size_t count_per_rank, int size);
ChunkLayout balanced_chunks(std::size_t total, int size);

}  // namespace tessera::detail
