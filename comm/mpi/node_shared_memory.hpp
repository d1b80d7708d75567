// NodeSharedMemory: one block of memory that every rank of a communicator maps, when all of them run
// on one node: rank 0 creates a POSIX shared-memory object with all its pages reserved up front
// (posix_fallocate, so a full /dev/shm is an error here and never a SIGBUS later), every rank maps
// it, and rank 0 unlinks it as soon as all have, so nothing outlives the processes, even killed
// ones. Each rank owns an equal part of it. Unmapping needs no other rank, so a communicator torn
// down while its peers are elsewhere never waits for them.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>

namespace tessera::detail {

// The page the block's parts and each call's data in a slot are aligned to.
inline constexpr std::size_t kSharedMemoryPage = 4096;

class NodeSharedMemory {
 public:
  // Collective over `comm` (rank `rank` of `size`). Returns null on every rank when any rank asks
  // for 0 bytes, when the ranks are not all on one node, or when any rank could not create or map
  // the memory (then MPI's point-to-point collectives serve instead); otherwise `bytes_per_rank` is
  // rank 0's, rounded up to whole pages.
  static std::unique_ptr<NodeSharedMemory> create(MPI_Comm comm, int rank, int size, std::size_t bytes_per_rank);
  ~NodeSharedMemory();
  NodeSharedMemory(const NodeSharedMemory&) = delete;
  NodeSharedMemory& operator=(const NodeSharedMemory&) = delete;

  // The part rank `rank` owns: bytes_per_rank() bytes, page-aligned, zero when created.
  std::byte* part(int rank) const { return base_ + static_cast<std::size_t>(rank) * bytes_per_rank_; }
  std::size_t bytes_per_rank() const { return bytes_per_rank_; }

 private:
  NodeSharedMemory(std::byte* base, std::size_t mapped_bytes, std::size_t bytes_per_rank)
      : base_(base), mapped_bytes_(mapped_bytes), bytes_per_rank_(bytes_per_rank) {}

  std::byte* base_;
  std::size_t mapped_bytes_;
  std::size_t bytes_per_rank_;
};

}  // namespace tessera::detail
