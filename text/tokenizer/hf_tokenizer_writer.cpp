// tokenizer.json and tokenizer_config.json from a GPT-2-format vocabulary.
#include "tessera/text/tokenizer/hf_tokenizer_writer.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tessera/text/tokenizer/hf_tokenizer_reader.hpp"
#include "tessera/text/tokenizer/tokenizer_file.hpp"

namespace tessera {
namespace {

using OrderedJson = nlohmann::ordered_json;  // keys written in insertion order

// GPT-2's ByteLevel settings, as the `tokenizers` library writes them for GPT-2.
OrderedJson byte_level(bool add_prefix_space, bool trim_offsets) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", add_prefix_space},
          {"trim_offsets", trim_offsets},
          {"use_regex", true}};
}

OrderedJson tokenizer_json(const BpeVocabulary& vocabulary, std::int32_t end_of_text) {
  OrderedJson vocab = OrderedJson::object();
  for (std::size_t id = 0; id < vocabulary.tokens.size(); ++id) vocab[vocabulary.tokens[id]] = id;
  // "left right" strings, which every version of the library reads; pairs where a token holds a
  // space (never in a byte-level vocabulary, where a space is 'Ġ').
  bool spaces = false;
  for (const auto& [left, right] : vocabulary.merges) {
    spaces = spaces || left.find(' ') != std::string::npos || right.find(' ') != std::string::npos;
  }
  OrderedJson merges = OrderedJson::array();
  for (const auto& [left, right] : vocabulary.merges) {
    merges.push_back(spaces ? OrderedJson::array({left, right}) : OrderedJson(left + " " + right));
  }
  OrderedJson model = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"vocab", std::move(vocab)},
                {"merges", std::move(merges)}};
  const OrderedJson added = {{"id", end_of_text}, {"content", kEndOfTextToken}, {"single_word", false}, {"lstrip", false},
                      {"rstrip", false},   {"normalized", true},         {"special", true}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", OrderedJson::array({added})},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level(false, true)},
          {"post_processor", byte_level(true, false)},
          {"decoder", byte_level(true, true)},
          {"model", std::move(model)}};
}

OrderedJson tokenizer_config_json(std::int32_t end_of_text) {
  const OrderedJson added = {{"content", kEndOfTextToken}, {"lstrip", false}, {"normalized", true}, {"rstrip", false},
                      {"single_word", false},       {"special", true}};
  return {{"tokenizer_class", "PreTrainedTokenizerFast"},
          {"bos_token", kEndOfTextToken},
          {"eos_token", kEndOfTextToken},
          {"unk_token", kEndOfTextToken},
          {"add_prefix_space", false},
          {"clean_up_tokenization_spaces", false},
          {"added_tokens_decoder", {{std::to_string(end_of_text), added}}}};
}

}  // namespace

void write_hf_tokenizer_files(const std::filesystem::path& dir, const BpeVocabulary& vocabulary) {
  std::int32_t end_of_text = -1;
  for (std::size_t id = 0; id < vocabulary.tokens.size(); ++id) {
    if (vocabulary.tokens[id] == kEndOfTextToken) end_of_text = static_cast<std::int32_t>(id);
  }
  if (end_of_text < 0) {
    throw std::invalid_argument(dir.string() + ": the vocabulary has no \"" + std::string(kEndOfTextToken) +
                                "\" token, which tokenizer.json and tokenizer_config.json name as end-of-text");
  }
  detail::write_tokenizer_file(dir / kHfTokenizerFileName,
                               tokenizer_json(vocabulary, end_of_text).dump(2, ' ', /*ensure_ascii=*/false) + "\n");
  detail::write_tokenizer_file(dir / kHfTokenizerConfigFileName, tokenizer_config_json(end_of_text).dump(2) + "\n");
}

}  // namespace tessera
