// pread_chunks: one OpenMP loop over the chunks, each thread a contiguous share through its own
// open file (read-ahead as a sequential stream), each chunk read whole (pread until done), hashed,
// and handed to the caller's function.
#include "tessera/checkpointing/load/chunk_pread.hpp"

#include <fcntl.h>
#include <omp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tessera/checkpointing/format/checksum.hpp"

namespace tessera {
namespace {

// "" when all `bytes` were read, else what went wrong.
std::string read_whole(int fd, std::byte* data, std::int64_t bytes, std::int64_t offset) {
  std::int64_t done = 0;
  while (done < bytes) {
    const ssize_t n =
        ::pread(fd, data + done, static_cast<std::size_t>(bytes - done), static_cast<off_t>(offset + done));
    if (n > 0) {
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
    int fd0, const std::string& path, std::span<const ChunkPread> chunks,
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
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const ChunkPread& c = chunks[static_cast<std::size_t>(i)];
      ChunkResult& r = results[static_cast<std::size_t>(i)];
      std::byte* data = c.target;
      if (data == nullptr) {
        if (scratch.size() < static_cast<std::size_t>(c.bytes)) scratch.resize(static_cast<std::size_t>(c.bytes));
        data = scratch.data();
      }
      r.error = fd < 0 ? open_error : read_whole(fd, data, c.bytes, c.offset);
      if (r.error.empty()) r.xxh64 = xxh64(data, static_cast<std::size_t>(c.bytes));
      use(static_cast<std::size_t>(i), data, r);
    }
    if (!first && fd >= 0) ::close(fd);
  }
  return results;
}

}  // namespace tessera
