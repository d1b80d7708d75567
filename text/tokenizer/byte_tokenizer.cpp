// ByteTokenizer: bytes <-> token ids (see byte_tokenizer.hpp for the id layout).
#include "tessera/text/tokenizer/byte_tokenizer.hpp"

namespace tessera {
namespace {

constexpr std::string_view kEndOfTextText = "\n\n";

void append_token(std::int32_t token, std::string& out) {
  if (token >= 0 && token < 256) {
    out.push_back(static_cast<char>(static_cast<unsigned char>(token)));
  } else if (token == ByteTokenizer::kEndOfText) {
    out.append(kEndOfTextText);
  } else {
    out.push_back(kUnknownTokenChar);
  }
}

}  // namespace

void ByteTokenizer::encode_append(std::string_view text, std::vector<std::int32_t>& out) const {
  out.reserve(out.size() + text.size());
  for (const char c : text) out.push_back(static_cast<std::int32_t>(static_cast<unsigned char>(c)));
}

std::string ByteTokenizer::decode(std::span<const std::int32_t> tokens) const {
  std::string text;
  text.reserve(tokens.size());
  for (const std::int32_t token : tokens) append_token(token, text);
  return text;
}

std::string ByteTokenizer::decode_token(std::int32_t token) const {
  std::string text;
  append_token(token, text);
  return text;
}

}  // namespace tessera
