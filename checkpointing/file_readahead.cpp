// FileReadahead: a queue of byte ranges and one thread that hands them to posix_fadvise in pieces.
#include "checkpointing/file_readahead.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace tessera {
namespace {

// One fadvise call covers at most this much, so a stop request waits for little.
constexpr std::int64_t kPieceBytes = std::int64_t{32} << 20;

}  // namespace

FileReadahead::FileReadahead(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (fd_ >= 0) thread_ = std::thread([this] { run(); });
}

FileReadahead::~FileReadahead() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

void FileReadahead::add(std::int64_t offset, std::int64_t bytes) {
  if (fd_ < 0 || bytes <= 0) return;
  {
    std::lock_guard lock(mutex_);
    if (!pending_.empty() && pending_.back().offset + pending_.back().bytes == offset) {
      pending_.back().bytes += bytes;
    } else {
      pending_.push_back({offset, bytes});
    }
  }
  wake_.notify_one();
}

std::int64_t FileReadahead::issued_bytes() const {
  std::lock_guard lock(mutex_);
  return issued_bytes_;
}

void FileReadahead::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !pending_.empty(); });
    if (stop_) return;
    Range& front = pending_.front();
    const Range piece{front.offset, std::min(front.bytes, kPieceBytes)};
    front.offset += piece.bytes;
    front.bytes -= piece.bytes;
    if (front.bytes == 0) pending_.pop_front();
    lock.unlock();
    // Starts the reads and returns; blocks only while the device's request queue is full.
    ::posix_fadvise(fd_, piece.offset, piece.bytes, POSIX_FADV_WILLNEED);
    lock.lock();
    issued_bytes_ += piece.bytes;
  }
}

}  // namespace tessera
