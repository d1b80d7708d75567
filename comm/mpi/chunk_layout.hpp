// ChunkLayout: which contiguous element range of a buffer each rank reduces (reduce-scatter phase)
// and then hands to everyone (all-gather phase). reduce_scatter and all_gather use equal chunks;
// all_reduce splits any count into near-equal chunks (the first count % size ranks get one more).
#pragma once

#include <cstddef>
#include <vector>

namespace tessera::detail {

struct ChunkLayout {
  std::vector<std::size_t> offset;  // per rank, in elements
  std::vector<std::size_t> count;   // per rank, in elements
};

ChunkLayout equal_chunks(std::size_t count_per_rank, int size);
ChunkLayout balanced_chunks(std::size_t total, int size);

}  // namespace tessera::detail
