// MpiAlgorithms: direct (all-to-all) reduce-scatter with a double-buffered segment pipeline, direct
// all-gather (segment-pipelined when it narrows to a wire dtype), all_reduce as the two, and MPI's
// own broadcast; each opens with its first exchange (call_check.hpp).
#include "tessera/comm/mpi/mpi_algorithms.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "tessera/comm/mpi/mpi_check.hpp"
#include "tessera/comm/mpi/request_poll.hpp"
#include "tessera/comm/mpi/segment_reduce.hpp"
#include "tessera/comm/wire_convert.hpp"

namespace tessera::detail {
namespace {

constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 30;  // MPI counts are int

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
  std::size_t count(int p) const { return ceil_div(layout.count(p), segment); }
  // Elements of segment k of rank p's chunk; 0 past its last segment.
  std::size_t length(int p, std::size_t k) const {
    return k < count(p) ? std::min(segment, layout.count(p) - k * segment) : 0;
  }
};

}  // namespace

MpiAlgorithms::MpiAlgorithms(MPI_Comm comm, int rank, int size, std::size_t segment_bytes,
                             std::size_t shared_memory_slot_bytes, std::string communicator_name,
                             LiveMpiCounters& counters)
    : comm_(comm),
      rank_(rank),
      size_(size),
      segment_bytes_(std::max<std::size_t>(segment_bytes, 64)),
      counters_(counters),
      first_(comm, rank, size, max_tag(comm), communicator_name, counters, spin_polls_),
      sources_(static_cast<std::size_t>(size)),
      wire_sources_(static_cast<std::size_t>(size)) {
  if (size > 1) {
    const std::size_t part =
        shared_memory_slot_bytes > 0 ? SharedMemoryCollectives::bytes_per_rank(shared_memory_slot_bytes) : 0;
    if (auto memory = NodeSharedMemory::create(comm, rank, size, part)) {
      shared_ = std::make_unique<SharedMemoryCollectives>(std::move(memory), rank, size, std::move(communicator_name),
                                                          counters, spin_polls_);
    }
  }
}

void MpiAlgorithms::post_recv(std::byte* data, std::size_t bytes, int peer, std::vector<MPI_Request>& requests) {
  for (std::size_t done = 0; done < bytes; done += kMaxMessageBytes) {
    const int n = static_cast<int>(std::min(kMaxMessageBytes, bytes - done));
    requests.emplace_back();
    TESSERA_MPI_CHECK(MPI_Irecv(data + done, n, MPI_BYTE, peer, first_.tag(), comm_, &requests.back()));
  }
}

void MpiAlgorithms::post_send(const std::byte* data, std::size_t bytes, int peer, std::vector<MPI_Request>& requests) {
  for (std::size_t done = 0; done < bytes; done += kMaxMessageBytes) {
    const int n = static_cast<int>(std::min(kMaxMessageBytes, bytes - done));
    requests.emplace_back();
    TESSERA_MPI_CHECK(MPI_Isend(data + done, n, MPI_BYTE, peer, first_.tag(), comm_, &requests.back()));
    LiveMpiCounters::bump(counters_.messages_sent);
  }
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
  const std::byte* own = in + layout.offset(r) * element;
  if (n == 1) {
    // One source: sum, avg (x / 1) and max are all the identity, exactly — of the value as it
    // would travel.
    if (converts) {
      const WireSource source{own, true};
      reduce_wire_in_order({&source, 1}, reinterpret_cast<float*>(out), layout.count(r), encoding.wire, op);
    } else if (out != own) {
      std::memcpy(out, own, layout.count(r) * element);
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
  auto receive_slot = [&](std::size_t k, std::size_t j) {
    return scratch_.data() + (k % 2) * slot_bytes + j * segment * wire_element;
  };
  auto receive_from = [&](std::size_t j) { return static_cast<int>((r + 1 + j) % n); };
  auto send_to = [&](std::size_t j) { return static_cast<int>((r + n - 1 - j) % n); };
  // Segment k of the peer's chunk as it travels: narrowed into send slot j first when converting.
  // Slot (k % 2) was last sent from by segment k - 2, which completed before segment k - 1 was reduced.
  auto outgoing = [&](std::size_t k, std::size_t j, int peer) {
    const std::size_t length = segments.length(peer, k);
    const std::byte* data = in + (layout.offset(peer) + k * segment) * element;
    if (converts && length > 0) {
      std::byte* packed = send_scratch_.data() + (k % 2) * slot_bytes + j * segment * wire_element;
      narrow_to_wire(reinterpret_cast<const float*>(data), packed, length, encoding.wire);
      data = packed;
    }
    return std::pair{data, length * wire_element};
  };
  auto post_segment = [&](std::size_t k, std::vector<MPI_Request>& requests) {
    const std::size_t bytes = segments.length(r, k) * wire_element;
    for (std::size_t j = 0; j < peers && bytes > 0; ++j) {
      post_recv(receive_slot(k, j), bytes, receive_from(j), requests);
    }
    for (std::size_t j = 0; j < peers; ++j) {
      const auto [data, bytes_out] = outgoing(k, j, send_to(j));
      if (bytes_out > 0) post_send(data, bytes_out, send_to(j), requests);
    }
  };

  // Segment 0 is the first exchange: one message from and to every peer, empty where a chunk is.
  const std::size_t first_bytes = segments.length(r, 0) * wire_element;
  for (std::size_t j = 0; j < peers; ++j) first_.post_recv(receive_from(j), receive_slot(0, j), first_bytes);
  for (std::size_t j = 0; j < peers; ++j) {
    const auto [data, bytes] = outgoing(0, j, send_to(j));
    first_.post_send(send_to(j), data, bytes);
  }
  first_.finish();

  for (std::size_t k = 0; k < segments.total; ++k) {
    if (k + 1 < segments.total) post_segment(k + 1, next_);
    wait_all(current_, spin_polls_);  // segment 0 has arrived already
    if (k < segments.count(r)) {
      for (int q = 0; q < n; ++q) {
        const std::size_t j = static_cast<std::size_t>((q - r - 1 + 2 * n) % n);
        sources_[q] = q == r ? own + k * segment * element : receive_slot(k, j);
        wire_sources_[q] = {sources_[q], q == r};
      }
      std::byte* target = out + k * segment * element;
      if (converts) {
        reduce_wire_in_order(wire_sources_, reinterpret_cast<float*>(target), segments.length(r, k), encoding.wire, op);
      } else {
        reduce_segment(sources_, target, segments.length(r, k), encoding.buffer, op);
      }
    }
    // Segment 0's sends complete while it is reduced; send slot 0 is narrowed into again for
    // segment 2, posted in the next round; all_reduce receives into what they sent from.
    if (k == 0) first_.complete_sends();
    current_.swap(next_);
  }
  if (segments.total == 0) first_.complete_sends();
}

void MpiAlgorithms::all_gather_phase(const std::byte* mine, std::byte* out, const ChunkLayout& layout, DType dtype,
                                     bool opens) {
  const std::size_t element = dtype_size(dtype);
  const int n = size_;
  const int r = rank_;
  std::byte* own = out + layout.offset(r) * element;
  if (n == 1) {
    if (own != mine) std::memcpy(own, mine, layout.count(r) * element);
    return;
  }
  auto receive_rest = [&](std::size_t skip_bytes) {
    for (int j = 1; j < n; ++j) {
      const int from = (r + j) % n;
      const std::size_t skip = std::min(skip_bytes, layout.count(from) * element);
      post_recv(out + layout.offset(from) * element + skip, layout.count(from) * element - skip, from, current_);
    }
  };
  auto send_rest = [&](std::size_t skip_bytes) {
    const std::size_t skip = std::min(skip_bytes, layout.count(r) * element);
    for (int j = 1; j < n; ++j) post_send(mine + skip, layout.count(r) * element - skip, (r + n - j) % n, current_);
  };
  if (!opens) {
    receive_rest(0);
    send_rest(0);
    // The local copy overlaps the peers' transfers, which are already under way.
    if (own != mine) std::memcpy(own, mine, layout.count(r) * element);
    wait_all(current_, spin_polls_);
    return;
  }
  // The first exchange: the first message (up to kMaxMessageBytes) of every chunk; the rest of a
  // chunk that large follows once it has completed.
  for (int j = 1; j < n; ++j) {
    const int from = (r + j) % n;
    first_.post_recv(from, out + layout.offset(from) * element,
                     std::min(kMaxMessageBytes, layout.count(from) * element));
  }
  for (int j = 1; j < n; ++j) {
    first_.post_send((r + n - j) % n, mine, std::min(kMaxMessageBytes, layout.count(r) * element));
  }
  first_.finish();
  receive_rest(kMaxMessageBytes);
  send_rest(kMaxMessageBytes);
  // The local copy overlaps the peers' copies of this rank's chunk.
  if (own != mine) std::memcpy(own, mine, layout.count(r) * element);
  first_.complete_sends();
  wait_all(current_, spin_polls_);
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
      post_recv(slot + j * segment * wire_element, segments.length(from, k) * wire_element, from, requests);
    }
    if (k >= segments.count(r)) return;
    std::byte* packed = send_scratch_.data() + (k % 2) * send_slot_bytes;
    const std::size_t length = segments.length(r, k);
    narrow_to_wire(mine + k * segment, packed, length, wire);
    for (std::size_t j = 0; j < peers; ++j) {
      const int to = static_cast<int>((r + n - 1 - j) % n);
      post_send(packed, length * wire_element, to, requests);
    }
  };

  if (segments.total > 0) post_segment(0, current_);
  for (std::size_t k = 0; k < segments.total; ++k) {
    if (k + 1 < segments.total) post_segment(k + 1, next_);
    wait_all(current_, spin_polls_);
    const std::byte* slot = scratch_.data() + (k % 2) * receive_slot_bytes;
    for (std::size_t j = 0; j < peers; ++j) {
      const int from = static_cast<int>((r + 1 + j) % n);
      if (k >= segments.count(from)) continue;
      widen_from_wire(slot + j * segment * wire_element, out + layout.offset(from) + k * segment,
                      segments.length(from, k), wire);
    }
    current_.swap(next_);
  }
}

void MpiAlgorithms::begin(const CollectiveCall& call) {
  // Requests a failed collective left behind belong to a communicator that refuses further calls.
  current_.clear();
  next_.clear();
  first_.begin(call);
}

void MpiAlgorithms::all_reduce(const CollectiveCall& call, void* buf, std::size_t count, DType dtype, ReduceOp op) {
  if (shared_ && shared_->all_reduce(call, static_cast<std::byte*>(buf), count, Encoding{dtype, dtype}, op)) return;
  begin(call);
  const ChunkLayout layout = balanced_chunks(count, size_);
  auto* bytes = static_cast<std::byte*>(buf);
  std::byte* own = bytes + layout.offset(rank_) * dtype_size(dtype);
  reduce_scatter_phase(bytes, own, layout, Encoding{dtype, dtype}, op);
  all_gather_phase(own, bytes, layout, dtype, false);
}

void MpiAlgorithms::all_reduce_f32(const CollectiveCall& call, float* buf, std::size_t count, DType wire, ReduceOp op) {
  const Encoding encoding{DType::kF32, wire};
  if (shared_ && shared_->all_reduce(call, reinterpret_cast<std::byte*>(buf), count, encoding, op)) return;
  begin(call);
  const ChunkLayout layout = balanced_chunks(count, size_);
  float* own = buf + layout.offset(rank_);
  reduce_scatter_phase(reinterpret_cast<const std::byte*>(buf), reinterpret_cast<std::byte*>(own), layout, encoding,
                       op);
  if (encoding.converts()) {
    all_gather_phase_narrowed(own, buf, layout, wire);
  } else {
    all_gather_phase(reinterpret_cast<const std::byte*>(own), reinterpret_cast<std::byte*>(buf), layout, wire, false);
  }
}

void MpiAlgorithms::reduce_scatter_f32(const CollectiveCall& call, const float* in, float* out,
                                       std::size_t count_per_rank, DType wire, ReduceOp op) {
  const Encoding encoding{DType::kF32, wire};
  const auto* in_bytes = reinterpret_cast<const std::byte*>(in);
  auto* out_bytes = reinterpret_cast<std::byte*>(out);
  if (shared_ && shared_->reduce_scatter(call, in_bytes, out_bytes, count_per_rank, encoding, op)) return;
  begin(call);
  reduce_scatter_phase(in_bytes, out_bytes, equal_chunks(count_per_rank, size_), encoding, op);
}

void MpiAlgorithms::reduce_scatter(const CollectiveCall& call, const void* in, void* out, std::size_t count_per_rank,
                                   DType dtype, ReduceOp op) {
  const auto* in_bytes = static_cast<const std::byte*>(in);
  auto* out_bytes = static_cast<std::byte*>(out);
  if (shared_ && shared_->reduce_scatter(call, in_bytes, out_bytes, count_per_rank, Encoding{dtype, dtype}, op)) return;
  begin(call);
  reduce_scatter_phase(in_bytes, out_bytes, equal_chunks(count_per_rank, size_), Encoding{dtype, dtype}, op);
}

void MpiAlgorithms::all_gather(const CollectiveCall& call, const void* in, void* out, std::size_t count_per_rank,
                               DType dtype) {
  const auto* in_bytes = static_cast<const std::byte*>(in);
  auto* out_bytes = static_cast<std::byte*>(out);
  if (shared_ && shared_->all_gather(call, in_bytes, out_bytes, count_per_rank, dtype)) return;
  begin(call);
  all_gather_phase(in_bytes, out_bytes, equal_chunks(count_per_rank, size_), dtype, true);
}

void MpiAlgorithms::broadcast(const CollectiveCall& call, void* buf, std::size_t count, DType dtype, int root) {
  auto* bytes = static_cast<std::byte*>(buf);
  if (shared_) {
    if (shared_->broadcast(call, bytes, count, dtype, root)) return;
  } else {
    first_.exchange_calls(call);
  }
  const std::size_t total = count * dtype_size(dtype);
  for (std::size_t done = 0; done < total; done += kMaxMessageBytes) {
    const int n = static_cast<int>(std::min(kMaxMessageBytes, total - done));
    TESSERA_MPI_CHECK(MPI_Bcast(bytes + done, n, MPI_BYTE, root, comm_));
  }
}

// Once every rank has sent its call to every other, every rank has arrived.
void MpiAlgorithms::barrier(const CollectiveCall& call) { agree_on_call(call); }

void MpiAlgorithms::agree_on_call(const CollectiveCall& call) {
  if (shared_) {
    shared_->agree(call);
  } else {
    first_.exchange_calls(call);
  }
}

}  // namespace tessera::detail
