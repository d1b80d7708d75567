// safetensors writer and reader: a JSON header through nlohmann-json, raw little-endian tensors.
#include "tessera/checkpointing/export/safetensors_file.hpp"

#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

#include "tessera/checkpointing/export/safetensors_header.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/precision/float_bits.hpp"

namespace tessera {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian: this host is not");

using nlohmann::json;

// A header larger than this is not a model's (the format's own readers cap it at 100 MB).
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

std::size_t element_bytes(DType dtype) { return safetensors_element_bytes(dtype); }

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kBF16: return "BF16";
    case DType::kF16: return "F16";
    default: break;
  }
  throw std::invalid_argument(std::string("safetensors export: dtype ") + dtype_name(dtype) +
                              " is not written; use f32, bf16 or f16");
}

SafetensorsWriter::SafetensorsWriter(const std::filesystem::path& out, std::vector<SafetensorsTensor> tensors,
                                     const std::map<std::string, std::string>& metadata)
    : out_(out), tmp_(out.string() + ".tmp"), tensors_(std::move(tensors)) {
  json header = json::object();
  std::uint64_t at = 0;
  for (SafetensorsTensor& t : tensors_) {
    t.begin = at;
    t.end = at + static_cast<std::uint64_t>(shape_numel(t.shape)) * element_bytes(t.dtype);
    at = t.end;
    header[t.name] = {
        {"dtype", safetensors_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // 8 + N stays a multiple of 8
  file_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!file_) {
    throw CheckpointError(CheckpointErrorKind::kIo, "cannot create " + tmp_.string() + "; check that " +
                                                        out.parent_path().string() + " exists and is writable");
  }
  const std::uint64_t n = text.size();  // little-endian on this host (asserted above)
  file_.write(reinterpret_cast<const char*>(&n), sizeof n);
  file_.write(text.data(), static_cast<std::streamsize>(text.size()));
}

void SafetensorsWriter::write_next(const std::vector<float>& values) {
  if (next_ >= tensors_.size()) throw std::logic_error("SafetensorsWriter: more tensors than the header lists");
  const SafetensorsTensor& t = tensors_[next_++];
  if (static_cast<std::int64_t>(values.size()) != shape_numel(t.shape)) {
    throw std::logic_error("SafetensorsWriter: " + t.name + " has " + std::to_string(values.size()) +
                           " values, its header shape " + shape_string(t.shape));
  }
  if (t.dtype == DType::kF32) {
    file_.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * 4));
  } else {
    std::vector<std::uint16_t> bits(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      bits[i] = t.dtype == DType::kBF16 ? f32_to_bf16(values[i]) : f32_to_f16(values[i]);
    }
    file_.write(reinterpret_cast<const char*>(bits.data()), static_cast<std::streamsize>(bits.size() * 2));
  }
  if (!file_) throw CheckpointError(CheckpointErrorKind::kIo, "writing " + t.name + " to " + tmp_.string());
}

std::int64_t SafetensorsWriter::finish() {
  if (next_ != tensors_.size()) {
    throw std::logic_error("SafetensorsWriter: " + std::to_string(tensors_.size() - next_) + " tensors not written");
  }
  file_.close();
  if (!file_) throw CheckpointError(CheckpointErrorKind::kIo, "closing " + tmp_.string());
  fsync_path(tmp_);
  durable_rename(tmp_, out_);
  return static_cast<std::int64_t>(std::filesystem::file_size(out_));
}

SafetensorsReader::SafetensorsReader(const std::filesystem::path& path) : path_(path) {
  const std::string where = path.string();
  file_.open(path, std::ios::binary);
  if (!file_) throw CheckpointError(CheckpointErrorKind::kMissingFile, "cannot open " + where);
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw CheckpointError(CheckpointErrorKind::kIo, where + ": cannot read its size: " + ec.message());
  std::uint64_t n = 0;
  if (size < 8 || !file_.read(reinterpret_cast<char*>(&n), sizeof n) || n > kMaxHeaderBytes || n > size - 8) {
    throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                          where + " is not a safetensors file (its first 8 bytes are not a header length that fits)");
  }
  std::string text(n, '\0');
  if (!file_.read(text.data(), static_cast<std::streamsize>(n))) {
    throw CheckpointError(CheckpointErrorKind::kTruncatedFile, "reading the header of " + where);
  }
  data_start_ = 8 + n;
  tensors_ = parse_safetensors_header(text, size - data_start_, where);
}

std::vector<float> SafetensorsReader::read_f32(const std::string& name) {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch, path_.string() + " has no tensor '" + name + "'");
  }
  const SafetensorsTensor& t = it->second;
  std::vector<float> values(static_cast<std::size_t>(shape_numel(t.shape)));
  file_.seekg(static_cast<std::streamoff>(data_start_ + t.begin));
  if (t.dtype == DType::kF32) {
    file_.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * 4));
  } else {
    std::vector<std::uint16_t> bits(values.size());
    file_.read(reinterpret_cast<char*>(bits.data()), static_cast<std::streamsize>(bits.size() * 2));
    for (std::size_t i = 0; i < bits.size(); ++i) {
      values[i] = t.dtype == DType::kBF16 ? bf16_to_f32(bits[i]) : f16_to_f32(bits[i]);
    }
  }
  if (!file_) throw CheckpointError(CheckpointErrorKind::kTruncatedFile, "reading " + path_.string() + ":" + name);
  return values;
}

}  // namespace tessera
