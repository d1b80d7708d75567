// hex64: a 64-bit value as 16 lowercase hex digits ("0123456789abcdef") and back — how checksums,
// save ids and tokenizer digests are printed and stored.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

std::string hex64(std::uint64_t value);
// False when `text` is not 16 lowercase hex digits.
bool parse_hex64(const std::string& text, std::uint64_t& value);

}  // namespace tessera
