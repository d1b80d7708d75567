// TokenizerSpec: names, flag handling and loading of the tokenizer a spec names.
#include "tessera/text/tokenizer/tokenizer_spec.hpp"

#include <cstdio>
#include <stdexcept>

#include "tessera/core/hex64.hpp"
#include "tessera/text/tokenizer/bpe_tokenizer.hpp"
#include "tessera/text/tokenizer/bpe_vocabulary.hpp"
#include "tessera/text/tokenizer/byte_tokenizer.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_reader.hpp"

namespace tessera {
namespace {


// What a spec's files are called in messages.
std::string files_of(const TokenizerSpec& spec) {
  return spec.kind == TokenizerKind::kHf ? "tokenizer.json" : "vocab.json and merges.txt";
}

std::uint64_t files_hash(const TokenizerSpec& spec) {
  return spec.kind == TokenizerKind::kHf ? hf_tokenizer_hash(spec.dir) : bpe_files_hash(spec.dir);
}

}  // namespace

const char* tokenizer_kind_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::kBytes: return "bytes";
    case TokenizerKind::kBpe: return "bpe";
    case TokenizerKind::kGpt2: return "gpt2";
    case TokenizerKind::kHf: return "hf";
  }
  return "?";
}

TokenizerKind parse_tokenizer_kind(std::string_view text, std::string_view what) {
  if (text == "bytes") return TokenizerKind::kBytes;
  if (text == "bpe") return TokenizerKind::kBpe;
  if (text == "gpt2") return TokenizerKind::kGpt2;
  if (text == "hf") return TokenizerKind::kHf;
  throw std::invalid_argument(std::string(what) + ": unknown tokenizer '" + std::string(text) +
                              "'; known tokenizers are bytes, bpe, gpt2 and hf");
}

std::string TokenizerSpec::describe() const {
  std::string text = std::string(tokenizer_kind_name(kind)) + ", " + std::to_string(vocab_size) + " tokens";
  if (kind != TokenizerKind::kBytes) text += dir.empty() ? ", no vocabulary files" : ", " + dir;
  return text;
}

TokenizerSpec bytes_tokenizer_spec() { return {TokenizerKind::kBytes, "", ByteTokenizer::kVocabSize, 0}; }

TokenizerSpec gpt2_tokenizer_spec(std::string dir) { return {TokenizerKind::kGpt2, std::move(dir), kGpt2VocabSize, 0}; }

TokenizerSpec bpe_tokenizer_spec(const std::string& dir, TokenizerKind kind) {
  if (names_hf_tokenizer(dir)) {
    const HfTokenizer tokenizer = read_hf_tokenizer(dir);
    return {TokenizerKind::kHf, dir, tokenizer.vocabulary.size(), hf_tokenizer_hash(dir)};
  }
  if (kind == TokenizerKind::kHf) kind = TokenizerKind::kBpe;
  const BpeVocabulary vocabulary = read_bpe_vocabulary(dir);
  return {kind, dir, vocabulary.size(), bpe_files_hash(dir)};
}

TokenizerSpec apply_tokenizer_flag(const TokenizerSpec& recorded, const std::string& value) {
  if (value.empty()) return recorded;
  if (value == "bytes") return bytes_tokenizer_spec();
  const TokenizerKind kind = recorded.kind == TokenizerKind::kBytes ? TokenizerKind::kBpe : recorded.kind;
  TokenizerSpec spec = bpe_tokenizer_spec(value, kind);
  if (recorded.kind == spec.kind && recorded.files_hash != 0 && recorded.files_hash != spec.files_hash) {
    throw std::runtime_error("--tokenizer " + value + ": these " + files_of(spec) + " (hash " + hex64(spec.files_hash) +
                             ") are not the ones the data was made with (hash " + hex64(recorded.files_hash) +
                             "); pass " +
                             (spec.kind == TokenizerKind::kHf ? "the tokenizer.json the data was made with"
                                                              : "the directory tessera_prepare wrote them to"));
  }
  return spec;
}

std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerSpec& spec) {
  if (spec.kind == TokenizerKind::kBytes) return std::make_unique<ByteTokenizer>();
  if (spec.dir.empty()) return nullptr;
  if (spec.files_hash != 0) {
    const std::uint64_t now = files_hash(spec);
    if (now != spec.files_hash) {
      throw std::runtime_error(spec.dir + ": " + files_of(spec) + " changed since the data was tokenized (hash " +
                               hex64(now) + ", recorded " + hex64(spec.files_hash) +
                               "); re-run tessera_prepare, or pass the original files with --tokenizer DIR");
    }
  }
  std::unique_ptr<BpeTokenizer> tokenizer;
  if (spec.kind == TokenizerKind::kHf) {
    HfTokenizer hf = read_hf_tokenizer(spec.dir);
    tokenizer = std::make_unique<BpeTokenizer>(std::move(hf.vocabulary), "hf", std::move(hf.encoding));
  } else {
    tokenizer = std::make_unique<BpeTokenizer>(read_bpe_vocabulary(spec.dir), tokenizer_kind_name(spec.kind));
  }
  if (spec.vocab_size != 0 && tokenizer->vocab_size() != spec.vocab_size) {
    throw std::runtime_error(
        spec.dir + ": " + std::string(spec.kind == TokenizerKind::kHf ? "tokenizer.json" : "vocab.json") + " holds " +
        std::to_string(tokenizer->vocab_size()) + " tokens but the data was made with " +
        std::to_string(spec.vocab_size) + "; pass the matching vocabulary with --tokenizer DIR");
  }
  return tokenizer;
}

}  // namespace tessera
