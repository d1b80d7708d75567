// safetensors files (the format of Hugging Face's `safetensors` library), written and read:
//
//   8 bytes      N, the header's length, unsigned little-endian
//   N bytes      JSON: {"<name>": {"dtype": "F32"|"BF16"|"F16", "shape": [..], "data_offsets": [begin, end]},
//                       ..., "__metadata__": {"<key>": "<string>", ...}}, padded with spaces so that
//                8 + N is a multiple of 8
//   the data     every tensor's raw little-endian values, row-major, at [begin, end) of this section;
//                the tensors follow each other without gaps, in the order they were added
//
// The writer streams: the header is written from the names, dtypes and shapes first, then each
// tensor's values in order, so a model never has to be in memory at once. Writes go to OUT.tmp,
// renamed over OUT by finish(). Errors (I/O, a header that does not parse, offsets that do not fit
// the file or overlap: checkpointing/export/safetensors_header.hpp) are CheckpointErrors naming the
// file, and are raised before anything the header sizes is allocated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tessera/precision/dtype.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;  // kF32, kBF16 or kF16
  Shape shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets in the data section (set by the writer, read by the reader)
};

const char* safetensors_dtype_name(DType dtype);  // "F32", "BF16", "F16"

class SafetensorsWriter {
 public:
  // Writes the header of `tensors` (their order is the data's order) and `metadata` to out.tmp.
  SafetensorsWriter(const std::filesystem::path& out, std::vector<SafetensorsTensor> tensors,
                    const std::map<std::string, std::string>& metadata);
  // The next tensor's values (as f32; converted to its dtype). Must come in the header's order with
  // the header's element count.
  void write_next(const std::vector<float>& values);
  // After every tensor: flushes, syncs and renames out.tmp to out. Returns the file's size.
  std::int64_t finish();

 private:
  std::filesystem::path out_, tmp_;
  std::vector<SafetensorsTensor> tensors_;
  std::size_t next_ = 0;
  std::ofstream file_;
};

class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::filesystem::path& path);  // parses and checks the header

  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // The whole tensor as f32 (BF16 and F16 widened exactly). CheckpointError kConfigMismatch when absent.
  std::vector<float> read_f32(const std::string& name);

 private:
  std::filesystem::path path_;
  std::ifstream file_;
  std::uint64_t data_start_ = 0;
  std::map<std::string, SafetensorsTensor> tensors_;
};

}  // namespace tessera
