// NodeSharedMemory: rank 0 creates and reserves the object, names it to the others, every rank maps
// it, all agree that every rank succeeded, then rank 0 unlinks the name.
#include "tessera/comm/mpi/node_shared_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

#include "tessera/comm/mpi/mpi_check.hpp"

namespace tessera::detail {
namespace {


// What rank 0 tells the others: the object's name (empty when it could not make one) and its size.
struct Offer {
  char name[64] = {};
  std::uint64_t bytes_per_rank = 0;
};

// Whether every rank of `comm` shares this rank's node.
bool all_on_one_node(MPI_Comm comm, int rank, int size) {
  MPI_Comm node = MPI_COMM_NULL;
  TESSERA_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int node_size = 0;
  TESSERA_MPI_CHECK(MPI_Comm_size(node, &node_size));
  MPI_Comm_free(&node);
  // Every rank sees the same answer: either all share one node or no rank's node holds them all.
  return node_size == size;
}

std::byte* map(int fd, std::size_t bytes) {
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return address == MAP_FAILED ? nullptr : static_cast<std::byte*>(address);
}

// Rank 0: a new object of `bytes`, reserved, mapped; the name goes into `offer`. Null on failure.
std::byte* create_object(std::size_t bytes, Offer& offer) {
  std::random_device entropy;
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::snprintf(offer.name, sizeof offer.name, "/tessera-%ld-%08x", static_cast<long>(getpid()), entropy());
    const int fd = shm_open(offer.name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) break;
    std::byte* base = nullptr;
    if (ftruncate(fd, static_cast<off_t>(bytes)) == 0 && posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0) {
      base = map(fd, bytes);
    }
    close(fd);
    if (base != nullptr) return base;
    shm_unlink(offer.name);
    break;
  }
  offer.name[0] = '\0';
  return nullptr;
}

std::byte* open_object(const Offer& offer, std::size_t bytes) {
  const int fd = shm_open(offer.name, O_RDWR, 0600);
  if (fd < 0) return nullptr;
  std::byte* base = map(fd, bytes);
  close(fd);
  return base;
}

}  // namespace

std::unique_ptr<NodeSharedMemory> NodeSharedMemory::create(MPI_Comm comm, int rank, int size,
                                                           std::size_t bytes_per_rank) {
  // A rank that asks for none turns it off for all, so every rank takes the same path below.
  std::uint64_t asked = bytes_per_rank;
  std::uint64_t least = 0;
  TESSERA_MPI_CHECK(MPI_Allreduce(&asked, &least, 1, MPI_UINT64_T, MPI_MIN, comm));
  if (least == 0 || !all_on_one_node(comm, rank, size)) return nullptr;
  Offer offer;
  offer.bytes_per_rank = (bytes_per_rank + kSharedMemoryPage - 1) / kSharedMemoryPage * kSharedMemoryPage;
  std::byte* base = nullptr;
  if (rank == 0) base = create_object(offer.bytes_per_rank * static_cast<std::size_t>(size), offer);
  TESSERA_MPI_CHECK(MPI_Bcast(&offer, sizeof offer, MPI_BYTE, 0, comm));
  const std::size_t bytes = offer.bytes_per_rank * static_cast<std::size_t>(size);
  if (rank != 0 && offer.name[0] != '\0') base = open_object(offer, bytes);
  int mapped = base != nullptr ? 1 : 0;
  int all_mapped = 0;
  TESSERA_MPI_CHECK(MPI_Allreduce(&mapped, &all_mapped, 1, MPI_INT, MPI_MIN, comm));
  if (rank == 0 && offer.name[0] != '\0') shm_unlink(offer.name);  // every rank has it open, or gave up
  if (!all_mapped) {
    if (base != nullptr) munmap(base, bytes);
    return nullptr;
  }
  return std::unique_ptr<NodeSharedMemory>(new NodeSharedMemory(base, bytes, offer.bytes_per_rank));
}

NodeSharedMemory::~NodeSharedMemory() { munmap(base_, mapped_bytes_); }

}  // namespace tessera::detail
