// Llama 3's pre-tokenization (its tokenizer.json's Split pre-tokenizer): text is cut into pieces
// before BPE runs inside each piece, as by the regular expression
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
// implemented by hand over UTF-8 characters (classes: char_class.hpp), the alternatives tried in
// that order at each position as the regex engine does. Against GPT-2's (gpt2_pretokenizer.hpp):
// contractions in any case; a letter run may take one leading character that is not a newline,
// letter or number (" word", "(word", "\tword"); numbers go in runs of at most three digits with
// no leading space; a symbol run takes the newlines after it; a whitespace run that holds a
// newline ends after its last newline.
// Bytes that are not valid UTF-8 count as symbols, so any bytes cut into pieces whose
// concatenation is the input.
#pragma once

#include <string_view>
#include <vector>

namespace tessera {

// The pieces of `text`, in order; they are views into `text` and concatenate to it.
std::vector<std::string_view> llama3_pretokenize(std::string_view text);

}  // namespace tessera
