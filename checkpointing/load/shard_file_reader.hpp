// ShardFileReader: reads element ranges of the state datasets of one shard file — exactly the
// chunks that hold them (hyperslab reads, never the whole file) — and verifies the checksum of every
// chunk it reads against the table written beside the dataset: XXH64 in format 3 files, the one
// the file's attribute chunk_checksum names from format 4 on (XXH3-64 when this build wrote it;
// checksum.hpp). A mismatch throws CheckpointError(kCorruptData) naming the file, dataset, chunk,
// the checksum and both sums.
//
// Speed: chunks stored without filters (the default, no compression) are read whole with pread at
// the addresses HDF5 gives — all the datasets of one call in one sweep in file order — straight into
// the destination when one range holds the chunk, on every OpenMP thread of the caller (the rank's
// CPU threads) and outside the HDF5 lock, each hashed piece by piece as it arrives (chunk_pread.hpp):
// one copy out of the page cache and one pass of the hash. Compressed chunks go through HDF5 in runs
// of a few chunks, each run verified on every thread as soon as it is read. The chunk refused is the
// same whatever the number of threads: the first bad one in the order they are checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/checkpointing/format/checksum.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera {

// `count` elements from element `begin` of a dataset go to `out` (elements of the read's dtype).
struct ElementRange {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  void* out = nullptr;
};

// The ranges to read of one state dataset of one unit.
struct DatasetRanges {
  std::string unit;     // "h.0"
  std::string dataset;  // "master", "exp_avg", ...
  DType dtype = DType::kF32;
  std::vector<ElementRange> ranges;
};

class ShardFileReader {
 public:
  // Opens `path` and checks it is shard `shard` of a format this build reads.
  ShardFileReader(std::string path, int shard);
  ~ShardFileReader();
  ShardFileReader(const ShardFileReader&) = delete;
  ShardFileReader& operator=(const ShardFileReader&) = delete;

  // The step and save id the file was written with (save id 0: none stored, format < 3).
  std::int64_t step() const { return step_; }
  std::uint64_t save_id() const { return save_id_; }
  // The checksum of the file's chunks.
  ChunkChecksum checksum() const { return checksum_; }

  const std::string& path() const { return path_; }
  // Reads every range of state dataset `dataset` ("master", "exp_avg", ...) of unit `unit`, whose
  // elements are `dtype` (a dataset stored in another dtype is refused as corrupt). Ranges may come
  // in any order and may overlap.
  void read(const std::string& unit, const std::string& dataset, DType dtype, std::vector<ElementRange> ranges);
  // Reads and verifies the same chunks as read() without keeping them (ranges' `out` is not used):
  // a check of everything before anything is written, through one reused buffer.
  void verify(const std::string& unit, const std::string& dataset, DType dtype,
              const std::vector<ElementRange>& ranges);
  // The same for many datasets of the file at once: their unfiltered chunks are read in one sweep in
  // the order they lie in the file, whatever the order of `reads`. On a refusal some ranges may
  // already hold what was read.
  void read(std::span<const DatasetRanges> reads);
  void verify(std::span<const DatasetRanges> reads);
  // Bytes of dataset elements read so far (whole chunks), by read() and verify().
  std::int64_t bytes_read() const { return bytes_read_; }

 private:
  // read() (keep: copy into the ranges' `out`) and verify() (keep false).
  void read_all(std::span<const DatasetRanges> reads, bool keep);

  std::string path_;
  detail::H5Id file_;
  std::int64_t step_ = -1;
  std::uint64_t save_id_ = 0;
  ChunkChecksum checksum_ = ChunkChecksum::kXxh64;
  std::int64_t bytes_read_ = 0;
  int raw_fd_ = -1;  // the file for pread of unfiltered chunks (-1: HDF5 reads everything)
  std::vector<std::byte> buffer_;
};

}  // namespace tessera
