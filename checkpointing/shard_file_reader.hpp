// ShardFileReader: reads element ranges of the state datasets of one shard file — exactly the
// chunks that hold them (hyperslab reads, never the whole file) — and verifies the XXH64 of every
// chunk it reads against the table written beside the dataset. A mismatch throws
// CheckpointError(kCorruptData) naming the file, dataset, chunk and both sums.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpointing/hdf5_util.hpp"

namespace tessera {

// `count` elements from element `begin` of a dataset go to `out`.
struct ElementRange {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  float* out = nullptr;
};

class ShardFileReader {
 public:
  // Opens `path` and checks it is shard `shard` of a format this build reads.
  ShardFileReader(std::string path, int shard);

  const std::string& path() const { return path_; }
  // Reads every range of dataset `dataset` ("master", "exp_avg", "exp_avg_sq") of unit `unit`.
  // Ranges may come in any order and may overlap.
  void read(const std::string& unit, const std::string& dataset, std::vector<ElementRange> ranges);
  // Bytes of dataset elements read so far (whole chunks).
  std::int64_t bytes_read() const { return bytes_read_; }

 private:
  std::string path_;
  detail::H5Id file_;
  std::int64_t bytes_read_ = 0;
  std::vector<float> buffer_;
};

}  // namespace tessera
