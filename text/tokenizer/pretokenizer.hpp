// Which pre-tokenization a byte-level BPE cuts text with before merging inside each piece: GPT-2's
// pattern (gpt2_pretokenizer.hpp) or Llama 3's (llama3_pretokenizer.hpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tessera {

enum class Pretokenizer : std::uint8_t { kGpt2, kLlama3 };

const char* pretokenizer_name(Pretokenizer pretokenizer);  // "GPT-2's pattern", "Llama 3's pattern"

// The pieces of `text` under `pretokenizer`; views into `text` that concatenate to it.
std::vector<std::string_view> pretokenize(Pretokenizer pretokenizer, std::string_view text);

}  // namespace tessera
