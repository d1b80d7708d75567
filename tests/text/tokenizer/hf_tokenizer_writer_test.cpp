// write_hf_tokenizer_files from a BpeVocabulary learned here: tokenizer.json reads back (kind hf)
// with the same tokens, merges and ids as the vocabulary's own BpeTokenizer, <|endoftext|> an added
// special token; tokenizer_config.json names PreTrainedTokenizerFast and the end-of-text token; a
// vocabulary without <|endoftext|> is refused. (transformers itself reads these files in
// hf_tokenizer_library_test.)
#include "tessera/text/tokenizer/hf_tokenizer_writer.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tessera/text/tokenizer/bpe_trainer.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_reader.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

using Json = nlohmann::json;

BpeVocabulary learned() {
  BpeTrainer trainer;
  trainer.add_text("the cat sat on the mat; the cat's hat is flat. caf\xc3\xa9 the cat \xe6\x97\xa5 the mat 123 123\n");
  return trainer.train(280);
}

Json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

TEST(HfTokenizerWriter, TokenizerJsonReadsBackWithTheSameIds) {
  const testing::ScratchDir dir("hf_tokenizer_writer");
  const BpeVocabulary vocabulary = learned();
  write_hf_tokenizer_files(dir.path(), vocabulary);
  HfTokenizer hf = read_hf_tokenizer(dir.path());
  EXPECT_EQ(hf.vocabulary.tokens, vocabulary.tokens);
  EXPECT_EQ(hf.vocabulary.merges, vocabulary.merges);
  EXPECT_EQ(hf.encoding.pretokenizer, Pretokenizer::kGpt2);
  EXPECT_EQ(hf.encoding.whole_pieces, WholePieces::kMerge);
  ASSERT_EQ(hf.encoding.added_tokens.size(), 1u);
  EXPECT_EQ(hf.encoding.added_tokens[0].content, "<|endoftext|>");
  const BpeTokenizer own(vocabulary, "bpe");
  const BpeTokenizer read_back(std::move(hf.vocabulary), "hf", std::move(hf.encoding));
  EXPECT_EQ(read_back.end_of_text(), own.end_of_text());
  for (const std::string text : {"the cat sat on the mat", " caf\xc3\xa9  123\n\n x", "it's   flat!"}) {
    EXPECT_EQ(read_back.encode(text), own.encode(text)) << text;
  }
  // The one difference: the library (and Tessera reading tokenizer.json) find <|endoftext|> in text.
  EXPECT_EQ(read_back.encode("a<|endoftext|>"), (std::vector<std::int32_t>{'a', own.end_of_text()}));
  EXPECT_GT(own.encode("a<|endoftext|>").size(), 2u);

  const Json json = read_json(dir / "tokenizer.json");
  EXPECT_EQ(json.at("added_tokens").at(0).at("special"), true);
  EXPECT_EQ(json.at("model").at("merges").at(0), vocabulary.merges[0].first + " " + vocabulary.merges[0].second);
  const Json config = read_json(dir / "tokenizer_config.json");
  EXPECT_EQ(config.at("tokenizer_class"), "PreTrainedTokenizerFast");
  EXPECT_EQ(config.at("eos_token"), "<|endoftext|>");
  EXPECT_EQ(config.at("bos_token"), "<|endoftext|>");
  EXPECT_EQ(config.at("added_tokens_decoder").at(std::to_string(own.end_of_text())).at("content"), "<|endoftext|>");
}

TEST(HfTokenizerWriter, RefusesAVocabularyWithoutEndOfText) {
  const testing::ScratchDir dir("hf_tokenizer_writer");
  BpeVocabulary vocabulary = learned();
  vocabulary.tokens.pop_back();  // the trainer puts <|endoftext|> last
  try {
    write_hf_tokenizer_files(dir.path(), vocabulary);
    FAIL() << "wrote a vocabulary without <|endoftext|>";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no \"<|endoftext|>\" token"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "tokenizer.json"));
}

}  // namespace
}  // namespace tessera
