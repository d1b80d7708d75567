// pread_chunks: reads byte ranges of one file — the chunks of datasets stored without filters, at
// the file addresses HDF5 reports — straight into their destinations with pread, on every OpenMP
// thread of the caller (each a contiguous share, through its own open file: one sequential stream
// each, the kernel's readahead keeping the disk busy while the threads copy and hash), and hashes
// each chunk (its ChunkChecksum) piece by piece as it arrives, while the piece is still in the
// core's cache: one copy out of the page cache and one pass of the hash per byte, outside HDF5's
// process-wide lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tessera/checkpointing/format/checksum.hpp"

namespace tessera {

struct ChunkPread {
  std::int64_t offset = 0;  // in the file
  std::int64_t bytes = 0;
  std::byte* target = nullptr;  // null: a scratch buffer of the reading thread
};

struct ChunkResult {
  std::uint64_t sum = 0;  // the chunk's checksum, of the kind pread_chunks was given
  std::string error;      // "" when read whole, else what failed ("2 of 4194304 bytes at offset ...")
};

// Reads every chunk of the file `path`, open as `fd` (which the first thread reads through; the
// others open their own: one readahead stream each, over contiguous shares of `chunks`) and hashes
// it with `checksum`; then, on the reading thread, `use(i, data, result)` sees chunk i's bytes (in
// its target or the scratch buffer) and its result. `use` must not throw. Results are in the order
// of `chunks`, whatever the number of threads.
std::vector<ChunkResult> pread_chunks(
    int fd, const std::string& path, ChunkChecksum checksum, std::span<const ChunkPread> chunks,
    const std::function<void(std::size_t, const std::byte*, const ChunkResult&)>& use);

}  // namespace tessera
