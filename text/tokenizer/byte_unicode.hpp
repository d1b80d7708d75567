// GPT-2's bytes_to_unicode table: every byte as one printable Unicode character, so that byte-level
// BPE tokens can be written as text in vocab.json and merges.txt. Bytes '!'..'~', U+00A1..U+00AC
// and U+00AE..U+00FF stand for themselves; the other 68 bytes (control characters, space, U+00AD
// ...) map in byte order to U+0100, U+0101, ... (space -> U+0120 'Ġ', '\n' -> U+010A 'Ċ').
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

// The code point that stands for `byte`.
std::uint32_t byte_to_code_point(std::uint8_t byte);
// The byte a code point stands for, or -1 when it is not in the table.
int code_point_to_byte(std::uint32_t code_point);

// Raw bytes -> their token text (UTF-8 of the mapped characters): "hi there" -> "hiĠthere".
std::string bytes_to_token_text(std::string_view bytes);
// Token text -> the raw bytes. Returns false (out unspecified) when the text holds a character
// that is not in the table (not a byte-level token).
bool token_text_to_bytes(std::string_view token_text, std::string& out);

}  // namespace tessera
