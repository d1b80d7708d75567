// ChunkLayout builders.
#include "tessera/comm/mpi/chunk_layout.hpp"

namespace tessera::detail {

ChunkLayout equal_chunks(std::size_t count_per_rank, int size) {
  ChunkLayout layout;
  for (int r = 0; r < size; ++r) {
    layout.offset.push_back(static_cast<std::size_t>(r) * count_per_rank);
    layout.count.push_back(count_per_rank);
  }
  return layout;
}

ChunkLayout balanced_chunks(std::size_t total, int size) {
  ChunkLayout layout;
  const std::size_t ranks = static_cast<std::size_t>(size);
  const std::size_t base = total / ranks;
  const std::size_t extra = total % ranks;
  std::size_t offset = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    const std::size_t count = base + (r < extra ? 1 : 0);
    layout.offset.push_back(offset);
    layout.count.push_back(count);
    offset += count;
  }
  return layout;
}

}  // namespace tessera::detail
