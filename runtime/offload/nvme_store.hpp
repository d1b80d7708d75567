// NvmeStore: this rank's offloaded tensors in one OffloadFile, and their transfers. A tensor of
// the store is a FileExtent: its values cut into chunks of one streamed block (block_elements
// elements, so block_elements / elements_per_value values), each chunk padded to the O_DIRECT
// alignment so that every chunk is one aligned transfer.
//
// Life: reserve() every tensor (the bytes are booked on the device's kNvme tracker under their
// category), allocate_file() once (checks the free space, allocates the file), then transfer:
// chunk by chunk, asynchronously, while streaming a step (window_stream), whole extents ahead of a
// unit's gather, or value ranges synchronously (initial values, checkpoints). On a device without
// data (the planner's meta device) no file is made: the store books bytes and moves nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/core/work.hpp"
#include "tessera/precision/dtype.hpp"
#include "tessera/runtime/memory_category.hpp"
#include "tessera/runtime/offload/aligned_buffer.hpp"
#include "tessera/runtime/offload/io_queue.hpp"
#include "tessera/runtime/offload/nvme_settings.hpp"

namespace tessera {

class Device;
class OffloadFile;

struct FileExtent {
  std::int64_t offset = -1;  // byte offset of chunk 0 in the file
  std::int64_t values = 0;   // values of the tensor
  std::size_t value_bytes = 0;
  std::int64_t values_per_chunk = 0;  // values of one streamed block
  std::int64_t chunk_stride = 0;      // bytes from one chunk to the next (aligned)

  bool defined() const { return offset >= 0; }
  std::int64_t chunks() const { return values_per_chunk > 0 ? (values + values_per_chunk - 1) / values_per_chunk : 0; }
  std::int64_t chunk_values(std::int64_t chunk) const;
  std::int64_t chunk_offset(std::int64_t chunk) const { return offset + chunk * chunk_stride; }
  // Bytes one transfer of `chunk` moves: its values, rounded up to the alignment.
  std::size_t chunk_io_bytes(std::int64_t chunk) const;
  // Bytes of the file the extent spans (the last chunk only as far as its transfer reaches).
  std::int64_t file_bytes() const;
};

// Bytes moved and time spent in streamed passes, for reports and benchmarks.
struct NvmeIoStats {
  std::int64_t bytes_read = 0, bytes_written = 0;  // all transfers
  std::int64_t bytes_read_whole = 0;               // of bytes_read: whole extents (read_all, gathers)
  double stream_seconds = 0.0;                     // wall time inside window_stream passes
};

class NvmeStore {
 public:
  // Opens the rank's file under settings.path (see OffloadFile for the checks) on a device with
  // data. Throws SettingError for bad settings or an unusable directory.
  NvmeStore(Device& device, const NvmeSettings& settings, int rank);
  ~NvmeStore();
  NvmeStore(const NvmeStore&) = delete;
  NvmeStore& operator=(const NvmeStore&) = delete;

  const NvmeSettings& settings() const { return settings_; }
  bool holds_data() const { return file_ != nullptr; }

  // Room for `values` values of `dtype`, one per `elements_per_value` elements of a streamed block.
  FileExtent reserve(std::int64_t values, DType dtype, std::int64_t elements_per_value, MemoryCategory category);
  // Allocates the file for everything reserved; throws SettingError("offload.path") without room.
  void allocate_file();
  std::int64_t file_bytes() const { return next_offset_; }

  // Synchronous transfers of values [first, first + count) of `extent` (partial chunks are read,
  // patched and written back). Throw IoError.
  void write(const FileExtent& extent, std::int64_t first, std::int64_t count, const void* src);
  void read(const FileExtent& extent, std::int64_t first, std::int64_t count, void* dst);

  // Asynchronous transfer of one chunk through an aligned buffer of chunk_io_bytes(chunk).
  IoQueue::Ticket read_chunk(const FileExtent& extent, std::int64_t chunk, void* buffer);
  IoQueue::Ticket write_chunk(const FileExtent& extent, std::int64_t chunk, const void* buffer);
  void wait(IoQueue::Ticket ticket);
  // Reads a whole extent into an aligned buffer of extent.file_bytes(); once the Work is waited
  // for, the buffer starts with the extent's values, back to back.
  Work read_all(const FileExtent& extent, void* buffer);

  // The ring of aligned buffers streaming passes use (booked as pinned host comm buffers).
  AlignedBuffer& ring() { return ring_; }

  NvmeIoStats& stats() { return stats_; }
  const NvmeIoStats& stats() const { return stats_; }
  // "io_uring, O_DIRECT, <file>" — how the file is accessed.
  std::string describe() const;
  // Lines for the user: a fallback and its reason, a stale file replaced.
  std::vector<std::string> notices() const;

 private:
  Device& device_;
  NvmeSettings settings_;
  std::unique_ptr<OffloadFile> file_;
  std::unique_ptr<IoQueue> queue_;
  std::string queue_refusal_;
  std::int64_t next_offset_ = 0;
  std::int64_t booked_[kMemoryCategoryCount] = {};
  AlignedBuffer ring_, bounce_;
  NvmeIoStats stats_;
};

}  // namespace tessera
