// TokenizerSpec: names, flag handling and loading of the tokenizer a spec names.
#include "tessera/text/tokenizer/tokenizer_spec.hpp"

#include <cstdio>
#include <stdexcept>

#include "tessera/text/tokenizer/bpe_tokenizer.hpp"
#include "tessera/text/tokenizer/bpe_vocabulary.hpp"
#include "tessera/text/tokenizer/byte_tokenizer.hpp"

namespace tessera {
namespace {

std::string hex(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

const char* tokenizer_kind_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::kBytes: return "bytes";
    case TokenizerKind::kBpe: return "bpe";
    case TokenizerKind::kGpt2: return "gpt2";
  }
  return "?";
}

TokenizerKind parse_tokenizer_kind(std::string_view text, std::string_view what) {
  if (text == "bytes") return TokenizerKind::kBytes;
  if (text == "bpe") return TokenizerKind::kBpe;
  if (text == "gpt2") return TokenizerKind::kGpt2;
  throw std::invalid_argument(std::string(what) + ": unknown tokenizer '" + std::string(text) +
                              "'; known tokenizers are bytes, bpe and gpt2");
}

std::string TokenizerSpec::describe() const {
  std::string text = std::string(tokenizer_kind_name(kind)) + ", " + std::to_string(vocab_size) + " tokens";
  if (kind != TokenizerKind::kBytes) text += dir.empty() ? ", no vocabulary files" : ", " + dir;
  return text;
}

TokenizerSpec bytes_tokenizer_spec() { return {TokenizerKind::kBytes, "", ByteTokenizer::kVocabSize, 0}; }

TokenizerSpec gpt2_tokenizer_spec(std::string dir) { return {TokenizerKind::kGpt2, std::move(dir), kGpt2VocabSize, 0}; }

TokenizerSpec bpe_tokenizer_spec(const std::string& dir, TokenizerKind kind) {
  const BpeVocabulary vocabulary = read_bpe_vocabulary(dir);
  return {kind, dir, vocabulary.size(), bpe_files_hash(dir)};
}

TokenizerSpec apply_tokenizer_flag(const TokenizerSpec& recorded, const std::string& value) {
  if (value.empty()) return recorded;
  if (value == "bytes") return bytes_tokenizer_spec();
  const TokenizerKind kind = recorded.kind == TokenizerKind::kBytes ? TokenizerKind::kBpe : recorded.kind;
  TokenizerSpec spec = bpe_tokenizer_spec(value, kind);
  if (recorded.kind == kind && recorded.files_hash != 0 && recorded.files_hash != spec.files_hash) {
    throw std::runtime_error("--tokenizer " + value + ": these vocab.json and merges.txt (hash " +
                             hex(spec.files_hash) + ") are not the ones the data was made with (hash " +
                             hex(recorded.files_hash) + "); pass the directory tessera_prepare wrote them to");
  }
  return spec;
}

std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerSpec& spec) {
  if (spec.kind == TokenizerKind::kBytes) return std::make_unique<ByteTokenizer>();
  if (spec.dir.empty()) return nullptr;
  if (spec.files_hash != 0) {
    const std::uint64_t now = bpe_files_hash(spec.dir);
    if (now != spec.files_hash) {
      throw std::runtime_error(spec.dir + ": vocab.json and merges.txt changed since the data was tokenized (hash " +
                               hex(now) + ", recorded " + hex(spec.files_hash) +
                               "); re-run tessera_prepare, or pass the original files with --tokenizer DIR");
    }
  }
  auto tokenizer = std::make_unique<BpeTokenizer>(read_bpe_vocabulary(spec.dir), tokenizer_kind_name(spec.kind));
  if (spec.vocab_size != 0 && tokenizer->vocab_size() != spec.vocab_size) {
    throw std::runtime_error(spec.dir + ": vocab.json holds " + std::to_string(tokenizer->vocab_size()) +
                             " tokens but the data was made with " + std::to_string(spec.vocab_size) +
                             "; pass the matching vocabulary with --tokenizer DIR");
  }
  return tokenizer;
}

}  // namespace tessera
