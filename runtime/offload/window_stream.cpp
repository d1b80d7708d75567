// stream_windows: the ring of buffer sets and the read / work / write pipeline.
#include "tessera/runtime/offload/window_stream.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace tessera {
namespace {

bool any_filed(std::span<const StreamSlot> slots) {
  for (const StreamSlot& s : slots) {
    if (s.filed != nullptr) return true;
  }
  return false;
}

}  // namespace

void stream_windows(NvmeStore* store, std::span<const StreamSlot> slots, std::int64_t count, const WindowWork& work) {
  std::vector<std::byte*> data(slots.size());
  if (store == nullptr || !any_filed(slots)) {
    for (std::size_t k = 0; k < slots.size(); ++k) data[k] = slots[k].resident;
    if (count > 0) work(0, count, data);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t window = store->settings().block_elements;
  const std::int64_t windows = (count + window - 1) / window;
  const std::size_t sets = static_cast<std::size_t>(store->settings().buffers);
  // Each set holds one chunk of every filed slot.
  std::vector<std::size_t> slot_offset(slots.size(), 0);
  std::size_t set_bytes = 0;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    if (slots[k].filed == nullptr) continue;
    slot_offset[k] = set_bytes;
    set_bytes += static_cast<std::size_t>(slots[k].filed->chunk_stride);
  }
  std::byte* ring = store->ring().reserve(sets * set_bytes);
  auto buffer = [&](std::int64_t w, std::size_t k) {
    return ring == nullptr ? nullptr : ring + static_cast<std::size_t>(w) % sets * set_bytes + slot_offset[k];
  };
  std::vector<std::vector<IoQueue::Ticket>> reads(sets), writes(sets);
  auto wait_list = [&](std::vector<IoQueue::Ticket>& tickets) {
    for (IoQueue::Ticket t : tickets) store->wait(t);
    tickets.clear();
  };
  auto issue_reads = [&](std::int64_t w) {
    std::vector<IoQueue::Ticket>& set_writes = writes[static_cast<std::size_t>(w) % sets];
    wait_list(set_writes);  // the set's previous window is on disk: its buffers may be reused
    for (std::size_t k = 0; k < slots.size(); ++k) {
      if (slots[k].filed != nullptr && slots[k].load) {
        reads[static_cast<std::size_t>(w) % sets].push_back(store->read_chunk(*slots[k].filed, w, buffer(w, k)));
      }
    }
  };
  try {
    // Reads run `ahead` windows ahead of the work. The set they fill last held window
    // w + ahead - sets = w - 2, whose write has had the work on window w - 1 to complete; with two
    // sets, the write of window w - 1 is waited for first.
    const std::int64_t ahead = std::max<std::int64_t>(1, static_cast<std::int64_t>(sets) - 2);
    for (std::int64_t w = 0; w < windows && w < ahead; ++w) issue_reads(w);
    for (std::int64_t w = 0; w < windows; ++w) {
      if (w + ahead < windows) issue_reads(w + ahead);
      const std::size_t set = static_cast<std::size_t>(w) % sets;
      wait_list(reads[set]);
      const std::int64_t begin = w * window, n = std::min(window, count - begin);
      for (std::size_t k = 0; k < slots.size(); ++k) {
        const StreamSlot& s = slots[k];
        data[k] = s.filed != nullptr
                      ? buffer(w, k)
                      : (s.resident == nullptr
                             ? nullptr
                             : s.resident + static_cast<std::size_t>(begin / s.elements_per_value) * s.value_bytes);
      }
      work(begin, n, data);
      for (std::size_t k = 0; k < slots.size(); ++k) {
        if (slots[k].filed != nullptr && slots[k].save)
          writes[set].push_back(store->write_chunk(*slots[k].filed, w, data[k]));
      }
    }
    for (auto& set_writes : writes) wait_list(set_writes);
  } catch (...) {
    // Leave no transfer running into buffers the caller may free.
    for (auto* lists : {&reads, &writes}) {
      for (auto& tickets : *lists) {
        for (IoQueue::Ticket t : tickets) {
          try {
            store->wait(t);
          } catch (...) {
          }
        }
      }
    }
    throw;
  }
  store->stats().stream_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace tessera
