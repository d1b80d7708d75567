// GPT-2's pre-tokenization: text is cut into pieces before BPE runs inside each piece, as by the
// regular expression
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// implemented by hand over UTF-8 characters (classes: char_class.hpp). The alternatives are tried
// in that order at each position, as the regex engine does: contractions first, then an optional
// space with a run of letters, numbers or other symbols, then whitespace — a whitespace run that
// is followed by a non-space gives its last character to the next piece (" word").
// Bytes that are not valid UTF-8 count as symbols (the [^\s\p{L}\p{N}] class), so any bytes cut
// into pieces whose concatenation is the input.
#pragma once

#include <string_view>
#include <vector>

namespace tessera {

// The pieces of `text`, in order; they are views into `text` and concatenate to it.
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

}  // namespace tessera
