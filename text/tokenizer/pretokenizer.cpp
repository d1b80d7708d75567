// The pre-tokenizers by name.
#include "tessera/text/tokenizer/pretokenizer.hpp"

#include "tessera/text/tokenizer/gpt2_pretokenizer.hpp"
#include "tessera/text/tokenizer/llama3_pretokenizer.hpp"

namespace tessera {

const char* pretokenizer_name(Pretokenizer pretokenizer) {
  switch (pretokenizer) {
    case Pretokenizer::kGpt2: return "GPT-2's pattern";
    case Pretokenizer::kLlama3: return "Llama 3's pattern";
  }
  return "?";
}

std::vector<std::string_view> pretokenize(Pretokenizer pretokenizer, std::string_view text) {
  return pretokenizer == Pretokenizer::kLlama3 ? llama3_pretokenize(text) : gpt2_pretokenize(text);
}

}  // namespace tessera
