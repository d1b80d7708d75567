// ChunkLayout builders.
#include "tessera/comm/mpi/chunk_layout.hpp"

namespace tessera::detail {

ChunkLayout equal_chunks(std::size_t count_per_rank, int size) {
  (void)size;
  return ChunkLayout{count_per_rank, 0};
}

ChunkLayout balanced_chunks(std::size_t total, int size) {
  const auto ranks = static_cast<std::size_t>(size);
  return ChunkLayout{total / ranks, total % ranks};
}

}  // namespace tessera::detail
