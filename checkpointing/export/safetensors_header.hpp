// The JSON header of a safetensors file, parsed and checked against the file before anything is
// allocated for a tensor: every entry an object with a known dtype, a shape of non-negative integer
// dimensions whose element and byte counts fit 64 bits, and integer data_offsets [begin, end) with
// end - begin the shape's bytes, inside the data section, overlapping no other tensor.
// "__metadata__" must map keys to strings. A header of another JSON type, fractional or negative
// numbers, or any of the above is refused with a CheckpointError naming the file, the tensor and
// the field.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "tessera/checkpointing/export/safetensors_file.hpp"

namespace tessera {

// `text`: the header's N bytes; `data_bytes`: the file's size less 8 + N; `where`: the file, for messages.
std::map<std::string, SafetensorsTensor> parse_safetensors_header(const std::string& text, std::uint64_t data_bytes,
                                                                  const std::string& where);

// Bytes per element of a safetensors dtype Tessera reads (4 for F32, 2 for BF16 and F16).
std::uint64_t safetensors_element_bytes(DType dtype);

}  // namespace tessera
