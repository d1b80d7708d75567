// PendingFreeList: polls each kept block's events (never blocking) and releases the finished ones
// outside the lock.
#include "tessera/runtime/pending_free_list.hpp"

#include <algorithm>

namespace tessera {

PendingFreeList::~PendingFreeList() { reclaim_all(); }

bool PendingFreeList::completed(const Block& block) {
  return std::all_of(block.pending.begin(), block.pending.end(), [](const Event& e) { return e.query(); });
}

void PendingFreeList::add(void* ptr, std::size_t bytes, MemoryKind kind, std::span<const Event> pending) noexcept {
  if (std::all_of(pending.begin(), pending.end(), [](const Event& e) { return e.query(); })) {
    release_(ptr, bytes, kind);
    return;
  }
  try {
    Block block{ptr, bytes, kind, std::vector<Event>(pending.begin(), pending.end())};
    std::lock_guard lock(mutex_);
    blocks_.push_back(std::move(block));
  } catch (...) {
    // Leaked: freeing it now could hand memory still in use to the next allocation.
  }
}

void PendingFreeList::reclaim_completed() noexcept {
  std::vector<Block> done;
  try {
    std::lock_guard lock(mutex_);
    if (blocks_.empty()) return;
    auto first_done =
        std::stable_partition(blocks_.begin(), blocks_.end(), [](const Block& b) { return !completed(b); });
    done.assign(std::make_move_iterator(first_done), std::make_move_iterator(blocks_.end()));
    blocks_.erase(first_done, blocks_.end());
  } catch (...) {
    return;  // out of memory for the list of finished blocks: try again on the next call
  }
  for (const Block& b : done) release_(b.ptr, b.bytes, b.kind);
}

void PendingFreeList::reclaim_all() noexcept {
  std::vector<Block> all;
  {
    std::lock_guard lock(mutex_);
    all.swap(blocks_);
  }
  for (const Block& b : all) {
    for (const Event& e : b.pending) {
      try {
        e.synchronize();
      } catch (...) {
      }
    }
    release_(b.ptr, b.bytes, b.kind);
  }
}

std::size_t PendingFreeList::bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const Block& b : blocks_) n += b.bytes;
  return n;
}

std::size_t PendingFreeList::size() const {
  std::lock_guard lock(mutex_);
  return blocks_.size();
}

}  // namespace tessera
