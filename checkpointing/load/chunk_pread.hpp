// pread_chunks: reads byte ranges of one file — the chunks of datasets stored without filters, at
// the file addresses HDF5 reports — straight into their destinations with pread, spread over the
// OpenMP threads (each a contiguous share, through its own open file), and hashes each (XXH64)
// right after it arrived, while it is still in the CPU's cache: one copy out of the page cache and
// one pass of the hash per byte, one request in flight per thread. What HDF5's own read would do for such chunks,
// without its process-wide lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace tessera {

struct ChunkPread {
  std::int64_t offset = 0;  // in the file
  std::int64_t bytes = 0;
  std::byte* target = nullptr;  // null: a scratch buffer of the reading thread
};

struct ChunkResult {
  std::uint64_t xxh64 = 0;
  std::string error;  // "" when read whole, else what failed ("2 of 4194304 bytes at offset ...")
};

// Reads every chunk of the file `path`, open as `fd` (which the first thread reads through; the
// others open their own: one readahead stream each, over contiguous shares of `chunks`); then, on the reading thread,
// `use(i, data, result)` sees chunk i's bytes (in its target or the scratch buffer) and its result (may be empty:
// nothing to do). `use` must not throw. Results are in the order of `chunks`.
std::vector<ChunkResult> pread_chunks(
    int fd, const std::string& path, std::span<const ChunkPread> chunks,
    const std::function<void(std::size_t, const std::byte*, const ChunkResult&)>& use);

}  // namespace tessera
