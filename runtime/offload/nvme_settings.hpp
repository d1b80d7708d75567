// NvmeSettings: how state offloaded to NVMe is stored and streamed — the directory of the offload
// files, the block (window) of elements a step moves through memory at a time, how many blocks'
// buffers form the ring (read of block i+1, update of block i and write of block i-1 overlap with
// 3 or more), the depth of the I/O queue, and how files are accessed:
//   kAuto      io_uring with O_DIRECT, falling back (with a notice) to buffered pread/pwrite where
//              the kernel refuses io_uring or the file system O_DIRECT
//   kBuffered  buffered pread/pwrite, synchronous (no overlap), through the page cache
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

enum class OffloadIo { kAuto, kBuffered };
const char* offload_io_name(OffloadIo io);  // "auto", "buffered"
// "auto" or "buffered"; anything else throws SettingError("offload.io").
OffloadIo parse_offload_io(const std::string& text);

struct NvmeSettings {
  std::string path;                       // directory of the offload files (one per rank)
  std::int64_t block_elements = 1 << 20;  // elements per streamed block (a multiple of the optimizer's block)
  int buffers = 4;                        // blocks in flight through the ring
  int queue_depth = 32;                   // io_uring submission queue entries
  OffloadIo io = OffloadIo::kAuto;

  // Throws SettingError ("offload.block", "offload.buffers", "offload.queue_depth") for values no
  // store can run with; `alignment` is the optimizer's block (the streamed block is a multiple).
  void validate(std::int64_t alignment) const;
};

}  // namespace tessera
