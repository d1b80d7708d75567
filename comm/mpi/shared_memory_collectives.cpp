// SharedMemoryCollectives: copies into and out of the ranks' slots, and counters in shared memory
// that a rank stores with release order after its writes and its peers load with acquire order
// before their reads.
#include "tessera/comm/mpi/shared_memory_collectives.hpp"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <utility>

#include "tessera/comm/mpi/chunk_layout.hpp"
#include "tessera/comm/mpi/request_poll.hpp"
#include "tessera/comm/mpi/segment_reduce.hpp"
#include "tessera/comm/wire_convert.hpp"

namespace tessera::detail {
namespace {

constexpr std::size_t kHeaderBytes = 4096;  // the slots start on a page
constexpr std::size_t kLine = 64;

// count elements of encoding.buffer at src into encoding.wire at dst (narrowed when it converts).
void to_wire(const std::byte* src, std::byte* dst, std::size_t count, Encoding encoding) {
  if (count == 0) return;
  if (encoding.converts()) {
    narrow_to_wire(reinterpret_cast<const float*>(src), dst, count, encoding.wire);
  } else {
    std::memcpy(dst, src, count * dtype_size(encoding.buffer));
  }
}

// The reverse: count wire elements at src into the caller's dtype at dst (exact).
void from_wire(const std::byte* src, std::byte* dst, std::size_t count, Encoding encoding) {
  if (count == 0) return;
  if (encoding.converts()) {
    widen_from_wire(src, reinterpret_cast<float*>(dst), count, encoding.wire);
  } else {
    std::memcpy(dst, src, count * dtype_size(encoding.buffer));
  }
}

std::uint64_t load_acquire(const std::uint64_t& counter) {
  return std::atomic_ref<const std::uint64_t>(counter).load(std::memory_order_acquire);
}

void store_release(std::uint64_t& counter, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>(counter).store(value, std::memory_order_release);
}

}  // namespace

// The start of each rank's part. Each counter has a cache line of its own: the owner writes it and
// every peer polls it.
struct SharedMemoryCollectives::Header {
  alignas(kLine) std::uint64_t arrived;  // the sequence number of the last call whose stage 1 is done
  alignas(kLine) std::uint64_t reduced;  // the last all_reduce whose chunk is reduced into the slot
  alignas(kLine) std::byte calls[2][sizeof(CollectiveCall)];  // call k at calls[k % 2], as bytes
  std::uint64_t offsets[2];                                   // where call k's data starts in slot k % 2
};

SharedMemoryCollectives::SharedMemoryCollectives(std::unique_ptr<NodeSharedMemory> memory, int rank, int size,
                                                 std::string communicator_name, LiveMpiCounters& counters,
                                                 const int& spin_polls)
    : memory_(std::move(memory)),
      rank_(rank),
      size_(size),
      name_(std::move(communicator_name)),
      counters_(counters),
      spin_polls_(spin_polls),
      slot_bytes_((memory_->bytes_per_rank() - kHeaderBytes) / 2 / kLine * kLine),
      sources_(static_cast<std::size_t>(size)),
      wire_sources_(static_cast<std::size_t>(size)),
      calls_(static_cast<std::size_t>(size)) {
  static_assert(sizeof(Header) <= kHeaderBytes);
  static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free, "counters shared between processes");
}

std::size_t SharedMemoryCollectives::bytes_per_rank(std::size_t slot_bytes) { return kHeaderBytes + 2 * slot_bytes; }

SharedMemoryCollectives::Header& SharedMemoryCollectives::header(int rank) const {
  return *reinterpret_cast<Header*>(memory_->part(rank));
}

std::byte* SharedMemoryCollectives::slot(int rank, std::uint64_t sequence) const {
  return memory_->part(rank) + kHeaderBytes + (sequence % 2) * slot_bytes_;
}

std::byte* SharedMemoryCollectives::claim(const CollectiveCall& call, std::size_t bytes) {
  const std::size_t parity = call.sequence % 2;
  std::size_t offset = next_offset_[parity];
  if (offset + bytes > slot_bytes_) offset = 0;
  next_offset_[parity] = (offset + bytes + kSharedMemoryPage - 1) / kSharedMemoryPage * kSharedMemoryPage;
  header(rank_).offsets[parity] = offset;  // published by arrive()
  return slot(rank_, call.sequence) + offset;
}

const std::byte* SharedMemoryCollectives::region(int rank, std::uint64_t sequence) const {
  return slot(rank, sequence) + header(rank).offsets[sequence % 2];
}

void SharedMemoryCollectives::arrive(const CollectiveCall& call) {
  Header& mine = header(rank_);
  std::memcpy(&mine.calls[call.sequence % 2], &call, sizeof call);
  store_release(mine.arrived, call.sequence);
}

void SharedMemoryCollectives::wait_for_counters(std::size_t offset, std::uint64_t sequence) {
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    const auto& counter = *reinterpret_cast<const std::uint64_t*>(memory_->part(p) + offset);
    for (PollBackoff backoff(spin_polls_); load_acquire(counter) < sequence; backoff.pause()) {
    }
  }
}

void SharedMemoryCollectives::wait_for_peers(const CollectiveCall& call) {
  wait_for_counters(offsetof(Header, arrived), call.sequence);
  bool same = true;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) {
      calls_[p] = call;
      continue;
    }
    std::memcpy(static_cast<void*>(&calls_[p]), &header(p).calls[call.sequence % 2], sizeof call);
    same = same && calls_[p] == call;
  }
  if (!same) throw CollectiveMismatchError(find_collective_mismatch(calls_, name_));
}

void SharedMemoryCollectives::agree(const CollectiveCall& call) {
  arrive(call);
  wait_for_peers(call);
  LiveMpiCounters::bump(counters_.call_exchanges);
}

void SharedMemoryCollectives::reduce_chunk(const std::byte* own_values, std::size_t wire_offset, std::size_t count,
                                           std::uint64_t sequence, Encoding encoding, ReduceOp op, std::byte* target) {
  if (count == 0) return;
  for (int q = 0; q < size_; ++q) {
    sources_[q] = q == rank_ ? static_cast<const void*>(own_values) : region(q, sequence) + wire_offset;
    wire_sources_[q] = {sources_[q], q == rank_};
  }
  if (encoding.converts()) {
    reduce_wire_in_order(wire_sources_, reinterpret_cast<float*>(target), count, encoding.wire, op);
  } else {
    reduce_segment(sources_, target, count, encoding.buffer, op);
  }
}

bool SharedMemoryCollectives::all_reduce(const CollectiveCall& call, std::byte* buf, std::size_t count,
                                         Encoding encoding, ReduceOp op) {
  const std::size_t element = dtype_size(encoding.buffer);
  const std::size_t wire_element = dtype_size(encoding.wire);
  if (count * wire_element > slot_bytes_) {
    agree(call);
    return false;
  }
  const ChunkLayout layout = balanced_chunks(count, size_);
  const std::uint64_t k = call.sequence;
  std::byte* mine = claim(call, count * wire_element);
  // Chunk p goes to rank p, which reduces it; this rank's own chunk is read where it is.
  for (int p = 0; p < size_; ++p) {
    if (p != rank_)
      to_wire(buf + layout.offset(p) * element, mine + layout.offset(p) * wire_element, layout.count(p), encoding);
  }
  arrive(call);
  wait_for_peers(call);
  std::byte* own = buf + layout.offset(rank_) * element;
  std::byte* own_in_slot = mine + layout.offset(rank_) * wire_element;
  reduce_chunk(own, layout.offset(rank_) * wire_element, layout.count(rank_), k, encoding, op, own);
  to_wire(own, own_in_slot, layout.count(rank_), encoding);  // exact: the values are already rounded to the wire
  store_release(header(rank_).reduced, k);
  wait_for_counters(offsetof(Header, reduced), k);
  for (int p = 0; p < size_; ++p) {
    if (p != rank_)
      from_wire(region(p, k) + layout.offset(p) * wire_element, buf + layout.offset(p) * element, layout.count(p),
                encoding);
  }
  return true;
}

bool SharedMemoryCollectives::reduce_scatter(const CollectiveCall& call, const std::byte* in, std::byte* out,
                                             std::size_t count_per_rank, Encoding encoding, ReduceOp op) {
  const std::size_t element = dtype_size(encoding.buffer);
  const std::size_t wire_element = dtype_size(encoding.wire);
  if (count_per_rank * static_cast<std::size_t>(size_) * wire_element > slot_bytes_) {
    agree(call);
    return false;
  }
  const ChunkLayout layout = equal_chunks(count_per_rank, size_);
  std::byte* mine = claim(call, count_per_rank * static_cast<std::size_t>(size_) * wire_element);
  for (int p = 0; p < size_; ++p) {
    if (p != rank_)
      to_wire(in + layout.offset(p) * element, mine + layout.offset(p) * wire_element, count_per_rank, encoding);
  }
  arrive(call);
  wait_for_peers(call);
  reduce_chunk(in + layout.offset(rank_) * element, layout.offset(rank_) * wire_element, count_per_rank, call.sequence,
               encoding, op, out);
  return true;
}

bool SharedMemoryCollectives::all_gather(const CollectiveCall& call, const std::byte* in, std::byte* out,
                                         std::size_t count_per_rank, DType dtype) {
  const std::size_t bytes = count_per_rank * dtype_size(dtype);
  if (bytes > slot_bytes_) {
    agree(call);
    return false;
  }
  if (bytes > 0) std::memcpy(claim(call, bytes), in, bytes);
  arrive(call);
  // The own chunk is copied while the peers are still arriving.
  std::byte* own = out + static_cast<std::size_t>(rank_) * bytes;
  if (own != in && bytes > 0) std::memcpy(own, in, bytes);
  wait_for_peers(call);
  for (int p = 0; p < size_; ++p) {
    if (p != rank_ && bytes > 0)
      std::memcpy(out + static_cast<std::size_t>(p) * bytes, region(p, call.sequence), bytes);
  }
  return true;
}

bool SharedMemoryCollectives::broadcast(const CollectiveCall& call, std::byte* buf, std::size_t count, DType dtype,
                                        int root) {
  const std::size_t bytes = count * dtype_size(dtype);
  if (bytes > slot_bytes_) {
    agree(call);
    return false;
  }
  if (rank_ == root && bytes > 0) std::memcpy(claim(call, bytes), buf, bytes);
  arrive(call);
  wait_for_peers(call);
  if (rank_ != root && bytes > 0) std::memcpy(buf, region(root, call.sequence), bytes);
  return true;
}

}  // namespace tessera::detail
