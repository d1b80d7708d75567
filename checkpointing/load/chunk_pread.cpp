// pread_chunks: one OpenMP loop over the chunks, each thread a contiguous share through its own
// open file (read-ahead as a sequential stream), each chunk read in pieces, each piece hashed as it
// arrives, then handed to the caller's function.
#include "tessera/checkpointing/load/chunk_pread.hpp"

#include <fcntl.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tessera {
namespace {

// Bytes per pread: the piece is hashed right after it arrived, while it is still in the core's
// cache (a 4 MiB chunk would not be).
constexpr std::int64_t kPieceBytes = std::int64_t{512} << 10;

// Reads `bytes` at `offset` into `data`, hashing each piece as it arrives; "" when all were read,
// else what went wrong.
std::string read_and_hash(int fd, std::byte* data, std::int64_t bytes, std::int64_t offset, ChunkHasher& hasher) {
  std::int64_t done = 0;
  while (done < bytes) {
    const std::int64_t want = std::min(kPieceBytes, bytes - done);
    const ssize_t n = ::pread(fd, data + done, static_cast<std::size_t>(want), static_cast<off_t>(offset + done));
    if (n > 0) {
      hasher.update(data + done, static_cast<std::size_t>(n));
      done += n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      return "the file ends after " + std::to_string(done) + " of " + std::to_string(bytes) + " bytes at offset " +
             std::to_string(offset);
    }
    return std::string("reading ") + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
           " failed: " + std::strerror(errno);
  }
  return {};
}

}  // namespace

std::vector<ChunkResult> pread_chunks(
    int fd0, const std::string& path, ChunkChecksum checksum, std::span<const ChunkPread> chunks,
    const std::function<void(std::size_t, const std::byte*, const ChunkResult&)>& use) {
  std::vector<ChunkResult> results(chunks.size());
  const auto n = static_cast<std::int64_t>(chunks.size());
#pragma omp parallel if (n > 1)
  {
    // Each thread its own open file (its own readahead state) and a contiguous share of the
    // chunks: one sequential stream per thread.
    const bool first = omp_get_thread_num() == 0;
    const int fd = first ? fd0 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    const std::string open_error = fd < 0 ? "opening " + path + " failed: " + std::strerror(errno) : "";
    // The share is read in order: the sequential hint doubles the kernel's readahead window, so the
    // disk keeps streaming while the thread hashes and hands over a chunk (a hint; failure is harmless).
    if (fd >= 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    std::vector<std::byte> scratch;
    ChunkHasher hasher;
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const ChunkPread& c = chunks[static_cast<std::size_t>(i)];
      ChunkResult& r = results[static_cast<std::size_t>(i)];
      std::byte* data = c.target;
      if (data == nullptr) {
        if (scratch.size() < static_cast<std::size_t>(c.bytes)) scratch.resize(static_cast<std::size_t>(c.bytes));
        data = scratch.data();
      }
      hasher.reset(checksum);
      r.error = fd < 0 ? open_error : read_and_hash(fd, data, c.bytes, c.offset, hasher);
      if (r.error.empty()) r.sum = hasher.digest();
      use(static_cast<std::size_t>(i), data, r);
    }
    if (!first && fd >= 0) ::close(fd);
  }
  return results;
}

}  // namespace tessera
