// BpeTokenizer against GPT-2-format files written here by hand: ids 0..255 are the bytes (their
// token text from the bytes_to_unicode table), then the merges below, then <|endoftext|>. The
// expected ids are worked out by hand from the merge ranks (lowest rank first, all occurrences
// left to right). Also: the table itself, decoding, and files that do not belong together.
#include "tessera/text/tokenizer/bpe_tokenizer.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/text/tokenizer/bpe_vocabulary.hpp"
#include "tessera/text/tokenizer/byte_unicode.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Ids = std::vector<std::int32_t>;

// rank: merge          -> new id
//   0: "Ġ t"           -> 256 "Ġt"
//   1: "h e"           -> 257 "he"
//   2: "Ġt he"         -> 258 "Ġthe"
//   3: "' s"           -> 259 "'s"
//   4: "Ġ 1"           -> 260 "Ġ1"
//   5: "2 3"           -> 261 "23"
//   6: "Ã ©"           -> 262 "Ã©"   (é is C3 A9; both bytes stand for themselves)
//   7: "c a"           -> 263 "ca"
//   8: "ca f"          -> 264 "caf"
//   9: "caf Ã©"        -> 265 "cafÃ©"
//  10: "Ġ Ġ"           -> 266 "ĠĠ"
// 267: <|endoftext|>
const std::vector<std::pair<std::string, std::string>> kMerges = {{"\xc4\xa0", "t"},
                                                                  {"h", "e"},
                                                                  {"\xc4\xa0t", "he"},
                                                                  {"'", "s"},
                                                                  {"\xc4\xa0", "1"},
                                                                  {"2", "3"},
                                                                  {"\xc3\x83", "\xc2\xa9"},
                                                                  {"c", "a"},
                                                                  {"ca", "f"},
                                                                  {"caf", "\xc3\x83\xc2\xa9"},
                                                                  {"\xc4\xa0", "\xc4\xa0"}};

class BpeTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "bpe_tokenizer_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // vocab.json by hand, in id order, with GPT-2's \u escapes for non-ASCII token text.
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(bytes_to_token_text(std::string(1, static_cast<char>(b))));
    for (const auto& [left, right] : kMerges) tokens.push_back(left + right);
    tokens.push_back("<|endoftext|>");
    std::ofstream vocab(dir_ / "vocab.json", std::ios::binary);
    vocab << "{";
    for (std::size_t id = 0; id < tokens.size(); ++id)
      vocab << (id ? ", " : "") << json_string(tokens[id]) << ": " << id;
    vocab << "}";
    std::ofstream merges(dir_ / "merges.txt", std::ios::binary);
    merges << "#version: 0.2\n";
    for (const auto& [left, right] : kMerges) merges << left << " " << right << "\n";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // A JSON string literal: ASCII as is (quote and backslash escaped), the rest as \uXXXX.
  static std::string json_string(const std::string& utf8) {
    std::string out = "\"";
    for (std::size_t i = 0; i < utf8.size();) {
      const auto c = static_cast<unsigned char>(utf8[i]);
      if (c < 0x80) {
        if (c == '"' || c == '\\') out += '\\';
        if (c < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", c);
          out += esc;
        } else {
          out += static_cast<char>(c);
        }
        ++i;
        continue;
      }
      const int len = c >= 0xe0 ? 3 : 2;  // the table's characters are all below U+0800
      std::uint32_t cp = len == 2 ? (c & 0x1f) : (c & 0x0f);
      for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(utf8[i + k]) & 0x3f);
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", cp);
      out += esc;
      i += len;
    }
    return out + "\"";
  }

  BpeTokenizer load() const { return BpeTokenizer(read_bpe_vocabulary(dir_), "gpt2"); }

  fs::path dir_;
};

TEST(ByteUnicode, GptTwoTable) {
  EXPECT_EQ(byte_to_code_point('!'), 0x21u);
  EXPECT_EQ(byte_to_code_point(' '), 0x120u);   // Ġ
  EXPECT_EQ(byte_to_code_point('\n'), 0x10au);  // Ċ
  EXPECT_EQ(byte_to_code_point(0), 0x100u);
  EXPECT_EQ(byte_to_code_point(0x7f), 0x121u);
  EXPECT_EQ(byte_to_code_point(0xad), 0x143u);  // soft hyphen -> Ń
  EXPECT_EQ(byte_to_code_point(0xe9), 0xe9u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(code_point_to_byte(byte_to_code_point(static_cast<std::uint8_t>(b))), b);
  EXPECT_EQ(code_point_to_byte(0x20), -1);  // space itself is not a token character
  EXPECT_EQ(bytes_to_token_text("a b"),
            "a\xc4\xa0"
            "b");
}

TEST_F(BpeTokenizerTest, LoadsTheFiles) {
  const BpeTokenizer tokenizer = load();
  EXPECT_EQ(tokenizer.vocab_size(), 268);
  EXPECT_EQ(tokenizer.end_of_text(), 267);
  EXPECT_EQ(tokenizer.vocabulary().merges.size(), kMerges.size());
  EXPECT_EQ(tokenizer.name(), "gpt2");
}

TEST_F(BpeTokenizerTest, EncodesKnownStringsToKnownIds) {
  const BpeTokenizer t = load();
  EXPECT_EQ(t.encode(" the"), (Ids{258}));                                // Ġt (0), he (1), Ġthe (2)
  EXPECT_EQ(t.encode("the"), (Ids{'t', 257}));                            // no "t he" merge
  EXPECT_EQ(t.encode("the cat's"), (Ids{'t', 257, ' ', 263, 't', 259}));  // "the" " cat" "'s"
  EXPECT_EQ(t.encode("it's"), (Ids{'i', 't', 259}));                      // contraction piece
  EXPECT_EQ(t.encode(" 123"), (Ids{260, 261}));                           // Ġ1 (rank 4) before 23 (rank 5)
  EXPECT_EQ(t.encode("x!?"), (Ids{'x', '!', '?'}));                       // punctuation, no merges
  EXPECT_EQ(t.encode(" caf\xc3\xa9"), (Ids{' ', 265}));                   // Ã© (6), ca (7), caf (8), cafÃ© (9)
  EXPECT_EQ(t.encode("hi   "), (Ids{'h', 'i', 266, ' '}));                // trailing run: ĠĠ then Ġ, left to right
  EXPECT_EQ(t.encode("a  b"), (Ids{'a', ' ', ' ', 'b'}));                 // " " and " b": no ĠĠ across pieces
  EXPECT_EQ(t.encode("\xe6\x97\xa5"), (Ids{0xe6, 0x97, 0xa5}));           // 日: its three bytes
  EXPECT_EQ(t.encode("<|endoftext|>"), (Ids{'<', '|', 'e', 'n', 'd', 'o', 'f', 't', 'e', 'x', 't', '|', '>'}));
}

TEST_F(BpeTokenizerTest, DecodesIdsToBytes) {
  const BpeTokenizer t = load();
  EXPECT_EQ(t.decode(Ids{258, 260, 261, ' ', 265}), " the 123 caf\xc3\xa9");
  EXPECT_EQ(t.decode(Ids{267}), "<|endoftext|>");
  EXPECT_EQ(t.decode(Ids{-1, 268}), "??");
  const std::string text = "It's 42\xff\xfe caf\xc3\xa9 \xe6\x97\xa5\n\n  the end  ";
  EXPECT_EQ(t.decode(t.encode(text)), text);
}

TEST_F(BpeTokenizerTest, RefusesFilesThatDoNotBelongTogether) {
  std::ofstream(dir_ / "merges.txt", std::ios::app) << "x yz\n";
  try {
    read_bpe_vocabulary(dir_);
    FAIL() << "expected an error for a merge whose part is not in vocab.json";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("merges.txt:13: 'yz' is not in vocab.json"), std::string::npos) << e.what();
  }
}

TEST_F(BpeTokenizerTest, RefusesAVocabularyWithoutEveryByte) {
  BpeVocabulary vocabulary = read_bpe_vocabulary(dir_);
  vocabulary.tokens[200] = "only-here";
  EXPECT_THROW(BpeTokenizer(vocabulary, "bpe"), std::invalid_argument);
}

}  // namespace
}  // namespace tessera
