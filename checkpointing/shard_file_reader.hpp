// ShardFileReader: reads element ranges of the state datasets of one shard file — exactly the
// chunks that hold them (hyperslab reads, never the whole file) — and verifies the XXH64 of every
// chunk it reads against the table written beside the dataset. A mismatch throws
// CheckpointError(kCorruptData) naming the file, dataset, chunk and both sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "checkpointing/hdf5_util.hpp"
#include "precision/dtype.hpp"

namespace tessera {

// `count` elements from element `begin` of a dataset go to `out` (elements of the read's dtype).
struct ElementRange {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  void* out = nullptr;
};

class ShardFileReader {
 public:
  // Opens `path` and checks it is shard `shard` of a format this build reads.
  ShardFileReader(std::string path, int shard);

  std::int64_t format_version() const { return format_version_; }
  // The step and save id the file was written with (save id 0: none stored, format < 3).
  std::int64_t step() const { return step_; }
  std::uint64_t save_id() const { return save_id_; }

  const std::string& path() const { return path_; }
  // Reads every range of state dataset `dataset` ("master", "exp_avg", ...) of unit `unit`, whose
  // elements are `dtype` (a dataset stored in another dtype is refused as corrupt). Ranges may come
  // in any order and may overlap.
  void read(const std::string& unit, const std::string& dataset, DType dtype, std::vector<ElementRange> ranges);
  // Bytes of dataset elements read so far (whole chunks).
  std::int64_t bytes_read() const { return bytes_read_; }

 private:
  std::string path_;
  detail::H5Id file_;
  std::int64_t format_version_ = 0;
  std::int64_t step_ = -1;
  std::uint64_t save_id_ = 0;
  std::int64_t bytes_read_ = 0;
  std::vector<std::byte> buffer_;
};

}  // namespace tessera
