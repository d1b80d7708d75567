// safetensors header checks: JSON types first, then 64-bit sizes with overflow checks, then the
// offsets against the data section and against each other.
#include "tessera/checkpointing/export/safetensors_header.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_error.hpp"

namespace tessera {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxDims = 8;  // GPT-2's tensors have 1 or 2; the format's readers allow few more

[[noreturn]] void refuse(const std::string& what) { throw CheckpointError(CheckpointErrorKind::kCorruptData, what); }

std::string type_of(const json& value) {
  if (value.is_number_float()) return "the fraction " + value.dump();
  if (value.is_number_integer()) return "the integer " + value.dump();
  return std::string("a JSON ") + value.type_name();
}

// A non-negative integer (not a fraction, bool or string), as JSON holds it.
std::uint64_t unsigned_field(const json& value, const std::string& field) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  refuse(field + " is " + type_of(value) + "; it must be a non-negative integer");
}

DType dtype_field(const json& entry, const std::string& where) {
  const auto it = entry.find("dtype");
  if (it == entry.end() || !it->is_string()) {
    refuse(where + ": field dtype is " + (it == entry.end() ? std::string("missing") : type_of(*it)) +
           "; it must be a string such as \"F32\"");
  }
  const std::string name = it->get<std::string>();
  if (name == "F32") return DType::kF32;
  if (name == "BF16") return DType::kBF16;
  if (name == "F16") return DType::kF16;
  throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                        where + " has dtype " + name + "; Tessera reads F32, BF16 and F16 tensors");
}

// The shape and its element count, every product checked against 2^63.
Shape shape_field(const json& entry, const std::string& where, std::uint64_t* numel) {
  const auto it = entry.find("shape");
  if (it == entry.end() || !it->is_array() || it->size() > kMaxDims) {
    refuse(where + ": field shape is " + (it == entry.end() ? std::string("missing") : type_of(*it)) +
           "; it must be an array of at most " + std::to_string(kMaxDims) + " non-negative integers");
  }
  Shape shape;
  std::uint64_t n = 1;
  for (std::size_t d = 0; d < it->size(); ++d) {
    const std::uint64_t dim = unsigned_field((*it)[d], where + ": shape[" + std::to_string(d) + "]");
    if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
        __builtin_mul_overflow(n, dim, &n) ||
        n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      refuse(where + ": shape " + it->dump() + " has more elements than 64-bit counts hold");
    }
    shape.push_back(static_cast<std::int64_t>(dim));
  }
  *numel = n;
  return shape;
}

SafetensorsTensor tensor_entry(const std::string& name, const json& entry, std::uint64_t data_bytes,
                               const std::string& file) {
  const std::string where = file + ": tensor '" + name + "'";
  if (!entry.is_object()) refuse(where + " is " + type_of(entry) + "; each tensor's entry must be a JSON object");
  SafetensorsTensor t;
  t.name = name;
  t.dtype = dtype_field(entry, where);
  std::uint64_t numel = 0;
  t.shape = shape_field(entry, where, &numel);
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(numel, safetensors_element_bytes(t.dtype), &bytes)) {
    refuse(where + ": shape " + shape_string(t.shape) + " has more bytes than 64-bit counts hold");
  }
  const auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2) {
    refuse(where + ": field data_offsets is " + (offsets == entry.end() ? std::string("missing") : type_of(*offsets)) +
           "; it must be [begin, end], two byte offsets into the data");
  }
  t.begin = unsigned_field((*offsets)[0], where + ": data_offsets[0]");
  t.end = unsigned_field((*offsets)[1], where + ": data_offsets[1]");
  if (t.end < t.begin || t.end - t.begin != bytes || t.end > data_bytes) {
    refuse(where + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ") do not hold the " +
           std::to_string(bytes) + " bytes of shape " + shape_string(t.shape) + " inside the " +
           std::to_string(data_bytes) + " bytes of data; the file is damaged or was not written as safetensors");
  }
  return t;
}

void check_metadata(const json& entry, const std::string& file) {
  if (!entry.is_object()) refuse(file + ": __metadata__ is " + type_of(entry) + "; it must be an object of strings");
  for (const auto& [key, value] : entry.items()) {
    if (!value.is_string()) {
      refuse(file + ": __metadata__ key '" + key + "' is " + type_of(value) + "; the format allows strings only");
    }
  }
}

// No two tensors with data share a byte.
void check_no_overlap(const std::map<std::string, SafetensorsTensor>& tensors, const std::string& file) {
  std::vector<const SafetensorsTensor*> order;
  for (const auto& [name, t] : tensors) {
    if (t.end > t.begin) order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < order.size(); ++i) {
    const SafetensorsTensor& prev = *order[i - 1];
    const SafetensorsTensor& t = *order[i];
    if (t.begin < prev.end) {
      refuse(file + ": tensor '" + t.name + "': data_offsets [" + std::to_string(t.begin) + ", " +
             std::to_string(t.end) + ") overlap tensor '" + prev.name + "' at [" + std::to_string(prev.begin) + ", " +
             std::to_string(prev.end) + "); every tensor needs bytes of its own");
    }
  }
}

}  // namespace

std::uint64_t safetensors_element_bytes(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

std::map<std::string, SafetensorsTensor> parse_safetensors_header(const std::string& text, std::uint64_t data_bytes,
                                                                  const std::string& where) {
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                          where + ": the safetensors header is not JSON: " + e.what());
  }
  if (!header.is_object()) {
    refuse(where + ": the safetensors header is " + type_of(header) + "; it must be an object of tensors");
  }
  std::map<std::string, SafetensorsTensor> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      check_metadata(entry, where);
    } else {
      tensors.emplace(name, tensor_entry(name, entry, data_bytes, where));
    }
  }
  check_no_overlap(tensors, where);
  return tensors;
}

}  // namespace tessera
