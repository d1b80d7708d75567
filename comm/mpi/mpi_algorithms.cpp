// MpiAlgorithms: direct (all-to-all) reduce-scatter with a double-buffered segment pipeline, direct
// all-gather (segment-pipelined when it narrows to a wire dtype), all_reduce as the two, and MPI's
// own broadcast and barrier.
#include "tessera/comm/mpi/mpi_algorithms.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "tessera/comm/collective_call.hpp"
#include "tessera/comm/host_reduce.hpp"
#include "tessera/comm/mpi/mpi_check.hpp"
#include "tessera/comm/wire_convert.hpp"

namespace tessera::detail {
namespace {

constexpr int kTagReduceScatter = 101;
constexpr int kTagAllGather = 102;
constexpr int kTagCount = 103;
constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 30;  // MPI counts are int

void post_recv(std::byte* data, std::size_t bytes, int peer, int tag, MPI_Comm comm,
               std::vector<MPI_Request>& requests) {
  for (std::size_t done = 0; done < bytes; done += kMaxMessageBytes) {
    const int n = static_cast<int>(std::min(kMaxMessageBytes, bytes - done));
    requests.emplace_back();
    TESSERA_MPI_CHECK(MPI_Irecv(data + done, n, MPI_BYTE, peer, tag, comm, &requests.back()));
  }
}

void post_send(const std::byte* data, std::size_t bytes, int peer, int tag, MPI_Comm comm,
               std::vector<MPI_Request>& requests) {
  for (std::size_t done = 0; done < bytes; done += kMaxMessageBytes) {
    const int n = static_cast<int>(std::min(kMaxMessageBytes, bytes - done));
    requests.emplace_back();
    TESSERA_MPI_CHECK(MPI_Isend(data + done, n, MPI_BYTE, peer, tag, comm, &requests.back()));
  }
}

// Polls the requests to completion. MPI_Waitall busy-spins a core for the whole transfer; this
// thread shares the machine with the compute threads it overlaps, so after a short spin it yields,
// and after a longer one it sleeps briefly between polls (each poll also drives MPI's progress).
void wait_all(std::vector<MPI_Request>& requests) {
  if (requests.empty()) return;
  for (int polls = 0;; ++polls) {
    int done = 0;
    TESSERA_MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE));
    if (done) break;
    if (polls < 64) continue;
    if (polls < 1024) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  requests.clear();
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// The segments of every rank's chunk that the pipelined phases move one at a time: rank p's chunk
// has count(p) segments of `segment` elements (the last one shorter); `total` is the most any rank has.
struct Segments {
  const ChunkLayout& layout;
  std::size_t segment;  // elements
  std::size_t total = 0;

  Segments(const ChunkLayout& l, std::size_t elements, int ranks) : layout(l), segment(elements) {
    for (int p = 0; p < ranks; ++p) total = std::max(total, count(p));
  }
  std::size_t count(int p) const { return ceil_div(layout.count[p], segment); }
  std::size_t length(int p, std::size_t k) const { return std::min(segment, layout.count[p] - k * segment); }
};

}  // namespace

MpiAlgorithms::MpiAlgorithms(MPI_Comm comm, int rank, int size, std::size_t segment_bytes)
    : comm_(comm), rank_(rank), size_(size), segment_bytes_(std::max<std::size_t>(segment_bytes, 64)) {}

void MpiAlgorithms::agree_on_count(const char* collective, std::size_t count, DType dtype) {
  if (size_ == 1) return;
  const std::uint64_t mine[2] = {count, static_cast<std::uint64_t>(dtype)};
  std::vector<std::uint64_t> theirs(2 * static_cast<std::size_t>(size_));
  std::vector<MPI_Request> requests;
  requests.reserve(2 * static_cast<std::size_t>(size_));
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    requests.emplace_back();
    TESSERA_MPI_CHECK(MPI_Irecv(theirs.data() + 2 * p, 2, MPI_UINT64_T, p, kTagCount, comm_, &requests.back()));
  }
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    requests.emplace_back();
    TESSERA_MPI_CHECK(MPI_Isend(mine, 2, MPI_UINT64_T, p, kTagCount, comm_, &requests.back()));
  }
  wait_all(requests);
  theirs[2 * rank_] = mine[0];
  theirs[2 * rank_ + 1] = mine[1];
  bool same = true;
  for (int p = 1; p < size_; ++p) same = same && theirs[2 * p] == theirs[0] && theirs[2 * p + 1] == theirs[1];
  if (same) return;
  std::string text = std::string(collective) + " was called with different counts on different ranks:";
  for (int p = 0; p < size_ && p < 8; ++p) {
    text += std::string(p == 0 ? " " : ", ") + "rank " + std::to_string(p) + " passed " +
            std::to_string(theirs[2 * p]) + " " + dtype_name(static_cast<DType>(theirs[2 * p + 1]));
  }
  if (size_ > 8) text += ", ...";
  text += " (this is rank " + std::to_string(rank_) +
          "). Every rank must pass the same count and dtype; run with TESSERA_DEBUG_COLLECTIVES=1 to see "
          "which calls diverged.";
  throw CollectiveMismatchError(text);
}

void MpiAlgorithms::reserve_scratch(std::size_t receive_bytes, std::size_t send_bytes) {
  if (scratch_.size() < receive_bytes) scratch_.resize(receive_bytes);
  if (send_scratch_.size() < send_bytes) send_scratch_.resize(send_bytes);
}

void MpiAlgorithms::reduce_scatter_phase(const std::byte* in, std::byte* out, const ChunkLayout& layout,
                                         Encoding encoding, ReduceOp op) {
  const std::size_t element = dtype_size(encoding.buffer);     // in the caller's buffers
  const std::size_t wire_element = dtype_size(encoding.wire);  // in messages
  const bool converts = encoding.converts();
  const int n = size_;
  const int r = rank_;
  const std::byte* own = in + layout.offset[r] * element;
  if (n == 1) {
    // One source: sum, avg (x / 1) and max are all the identity, exactly — of the value as it
    // would travel.
    if (converts) {
      const WireSource source{own, true};
      reduce_wire_in_order({&source, 1}, reinterpret_cast<float*>(out), layout.count[r], encoding.wire, op);
    } else if (out != own) {
      std::memcpy(out, own, layout.count[r] * element);
    }
    return;
  }
  const std::size_t segment = std::max<std::size_t>(1, segment_bytes_ / wire_element);  // elements
  const std::size_t peers = static_cast<std::size_t>(n - 1);
  const std::size_t slot_bytes = peers * segment * wire_element;
  reserve_scratch(2 * slot_bytes, converts ? 2 * slot_bytes : 0);

  const Segments segments(layout, segment, n);

  // Receive slot j (of a segment) holds the contribution of peer (r + 1 + j) % n; send slot j the
  // narrowed segment for peer (r + n - 1 - j) % n.
  auto post_segment = [&](std::size_t k, std::vector<MPI_Request>& requests) {
    std::byte* slot = scratch_.data() + (k % 2) * slot_bytes;
    if (k < segments.count(r)) {
      const std::size_t bytes = segments.length(r, k) * wire_element;
      for (std::size_t j = 0; j < peers; ++j) {
        const int peer = static_cast<int>((r + 1 + j) % n);
        post_recv(slot + j * segment * wire_element, bytes, peer, kTagReduceScatter, comm_, requests);
      }
    }
    for (std::size_t j = 0; j < peers; ++j) {
      const int peer = static_cast<int>((r + n - 1 - j) % n);
      if (k >= segments.count(peer)) continue;
      const std::size_t length = segments.length(peer, k);
      const std::byte* data = in + (layout.offset[peer] + k * segment) * element;
      if (converts) {
        // Slot (k % 2) was last sent from by segment k - 2, which completed before segment k - 1
        // was reduced.
        std::byte* packed = send_scratch_.data() + (k % 2) * slot_bytes + j * segment * wire_element;
        narrow_to_wire(reinterpret_cast<const float*>(data), packed, length, encoding.wire);
        data = packed;
      }
      post_send(data, length * wire_element, peer, kTagReduceScatter, comm_, requests);
    }
  };

  std::vector<MPI_Request> current;
  std::vector<MPI_Request> next;
  std::vector<const void*> sources(static_cast<std::size_t>(n));
  std::vector<WireSource> wire_sources(static_cast<std::size_t>(n));
  post_segment(0, current);
  for (std::size_t k = 0; k < segments.total; ++k) {
    if (k + 1 < segments.total) post_segment(k + 1, next);
    wait_all(current);
    if (k < segments.count(r)) {
      const std::byte* slot = scratch_.data() + (k % 2) * slot_bytes;
      for (int q = 0; q < n; ++q) {
        const std::size_t j = static_cast<std::size_t>((q - r - 1 + 2 * n) % n);
        sources[q] = q == r ? own + k * segment * element : slot + j * segment * wire_element;
        wire_sources[q] = {sources[q], q == r};
      }
      std::byte* target = out + k * segment * element;
      if (converts) {
        reduce_wire_in_order(wire_sources, reinterpret_cast<float*>(target), segments.length(r, k), encoding.wire, op);
      } else {
        reduce_in_order(sources, target, segments.length(r, k), encoding.buffer, op);
      }
    }
    current.swap(next);
  }
}

void MpiAlgorithms::all_gather_phase(const std::byte* mine, std::byte* out, const ChunkLayout& layout, DType dtype) {
  const std::size_t element = dtype_size(dtype);
  const int n = size_;
  const int r = rank_;
  std::vector<MPI_Request> requests;
  for (int j = 1; j < n; ++j) {
    const int from = (r + j) % n;
    post_recv(out + layout.offset[from] * element, layout.count[from] * element, from, kTagAllGather, comm_, requests);
  }
  for (int j = 1; j < n; ++j) {
    const int to = (r + n - j) % n;
    post_send(mine, layout.count[r] * element, to, kTagAllGather, comm_, requests);
  }
  // The local copy overlaps the peers' transfers, which are already under way.
  std::byte* own = out + layout.offset[r] * element;
  if (own != mine) std::memcpy(own, mine, layout.count[r] * element);
  wait_all(requests);
}

void MpiAlgorithms::all_gather_phase_narrowed(const float* mine, float* out, const ChunkLayout& layout, DType wire) {
  const std::size_t wire_element = dtype_size(wire);
  const int n = size_;
  const int r = rank_;
  if (n == 1) return;                                                                   // mine is already in place
  const std::size_t segment = std::max<std::size_t>(1, segment_bytes_ / wire_element);  // elements
  const std::size_t peers = static_cast<std::size_t>(n - 1);
  const std::size_t receive_slot_bytes = peers * segment * wire_element;
  const std::size_t send_slot_bytes = segment * wire_element;
  reserve_scratch(2 * receive_slot_bytes, 2 * send_slot_bytes);

  const Segments segments(layout, segment, n);

  // Receive slot j holds segment k of peer (r + 1 + j) % n; the send slot, segment k of this
  // rank's chunk narrowed once for every peer.
  auto post_segment = [&](std::size_t k, std::vector<MPI_Request>& requests) {
    std::byte* slot = scratch_.data() + (k % 2) * receive_slot_bytes;
    for (std::size_t j = 0; j < peers; ++j) {
      const int from = static_cast<int>((r + 1 + j) % n);
      if (k >= segments.count(from)) continue;
      post_recv(slot + j * segment * wire_element, segments.length(from, k) * wire_element, from, kTagAllGather, comm_,
                requests);
    }
    if (k >= segments.count(r)) return;
    std::byte* packed = send_scratch_.data() + (k % 2) * send_slot_bytes;
    const std::size_t length = segments.length(r, k);
    narrow_to_wire(mine + k * segment, packed, length, wire);
    for (std::size_t j = 0; j < peers; ++j) {
      const int to = static_cast<int>((r + n - 1 - j) % n);
      post_send(packed, length * wire_element, to, kTagAllGather, comm_, requests);
    }
  };

  std::vector<MPI_Request> current;
  std::vector<MPI_Request> next;
  post_segment(0, current);
  for (std::size_t k = 0; k < segments.total; ++k) {
    if (k + 1 < segments.total) post_segment(k + 1, next);
    wait_all(current);
    const std::byte* slot = scratch_.data() + (k % 2) * receive_slot_bytes;
    for (std::size_t j = 0; j < peers; ++j) {
      const int from = static_cast<int>((r + 1 + j) % n);
      if (k >= segments.count(from)) continue;
      widen_from_wire(slot + j * segment * wire_element, out + layout.offset[from] + k * segment,
                      segments.length(from, k), wire);
    }
    current.swap(next);
  }
}

void MpiAlgorithms::all_reduce(void* buf, std::size_t count, DType dtype, ReduceOp op) {
  agree_on_count("all_reduce", count, dtype);
  const ChunkLayout layout = balanced_chunks(count, size_);
  auto* bytes = static_cast<std::byte*>(buf);
  std::byte* own = bytes + layout.offset[rank_] * dtype_size(dtype);
  reduce_scatter_phase(bytes, own, layout, Encoding{dtype, dtype}, op);
  all_gather_phase(own, bytes, layout, dtype);
}

void MpiAlgorithms::all_reduce_f32(float* buf, std::size_t count, DType wire, ReduceOp op) {
  agree_on_count("all_reduce_f32", count, wire);
  const ChunkLayout layout = balanced_chunks(count, size_);
  float* own = buf + layout.offset[rank_];
  const Encoding encoding{DType::kF32, wire};
  reduce_scatter_phase(reinterpret_cast<const std::byte*>(buf), reinterpret_cast<std::byte*>(own), layout, encoding,
                       op);
  if (encoding.converts()) {
    all_gather_phase_narrowed(own, buf, layout, wire);
  } else {
    all_gather_phase(reinterpret_cast<const std::byte*>(own), reinterpret_cast<std::byte*>(buf), layout, wire);
  }
}

void MpiAlgorithms::reduce_scatter_f32(const float* in, float* out, std::size_t count_per_rank, DType wire,
                                       ReduceOp op) {
  agree_on_count("reduce_scatter_f32", count_per_rank, wire);
  reduce_scatter_phase(reinterpret_cast<const std::byte*>(in), reinterpret_cast<std::byte*>(out),
                       equal_chunks(count_per_rank, size_), Encoding{DType::kF32, wire}, op);
}

void MpiAlgorithms::reduce_scatter(const void* in, void* out, std::size_t count_per_rank, DType dtype, ReduceOp op) {
  agree_on_count("reduce_scatter", count_per_rank, dtype);
  reduce_scatter_phase(static_cast<const std::byte*>(in), static_cast<std::byte*>(out),
                       equal_chunks(count_per_rank, size_), Encoding{dtype, dtype}, op);
}

void MpiAlgorithms::all_gather(const void* in, void* out, std::size_t count_per_rank, DType dtype) {
  agree_on_count("all_gather", count_per_rank, dtype);
  all_gather_phase(static_cast<const std::byte*>(in), static_cast<std::byte*>(out), equal_chunks(count_per_rank, size_),
                   dtype);
}

void MpiAlgorithms::broadcast(void* buf, std::size_t count, DType dtype, int root) {
  agree_on_count("broadcast", count, dtype);
  auto* bytes = static_cast<std::byte*>(buf);
  const std::size_t total = count * dtype_size(dtype);
  for (std::size_t done = 0; done < total; done += kMaxMessageBytes) {
    const int n = static_cast<int>(std::min(kMaxMessageBytes, total - done));
    TESSERA_MPI_CHECK(MPI_Bcast(bytes + done, n, MPI_BYTE, root, comm_));
  }
}

void MpiAlgorithms::barrier() { TESSERA_MPI_CHECK(MPI_Barrier(comm_)); }

}  // namespace tessera::detail
