// Llama 3 pre-tokenization by hand against pieces worked out from the pattern
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
// where it differs from GPT-2's: contractions in any case, one leading non-letter joining a word,
// numbers in threes without a space, newlines joining the symbols before them, whitespace runs cut
// after their last newline; and the pieces of arbitrary bytes always concatenate to the input.
#include "tessera/text/tokenizer/llama3_pretokenizer.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/core/random.hpp"

namespace tessera {
namespace {

using Pieces = std::vector<std::string>;

Pieces llama3_pieces(const std::string& text) {
  Pieces out;
  for (const std::string_view p : llama3_pretokenize(text)) out.emplace_back(p);
  return out;
}

TEST(Llama3Pretokenizer, WordsTakeOneCharacterBeforeThem) {
  EXPECT_EQ(llama3_pieces("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(llama3_pieces("(word) x\ty"), (Pieces{"(word", ")", " x", "\ty"}));
  const std::string uber = std::string(" \xc3\xbc") + "ber";  // " über"
  EXPECT_EQ(llama3_pieces("caf\xc3\xa9" + uber), (Pieces{"caf\xc3\xa9", uber}));
  EXPECT_EQ(llama3_pieces(""), Pieces{});
}

TEST(Llama3Pretokenizer, ContractionsInAnyCase) {
  EXPECT_EQ(llama3_pieces("I'M don't WE'RE it'S"), (Pieces{"I", "'M", " don", "'t", " WE", "'RE", " it", "'S"}));
  EXPECT_EQ(llama3_pieces("'x"), (Pieces{"'x"}));  // not a contraction: the apostrophe joins the word
  EXPECT_EQ(llama3_pieces("x'\xc5\xbft"), (Pieces{"x", "'\xc5\xbf", "t"}));  // 'ſ: ſ case-folds to s
}

TEST(Llama3Pretokenizer, NumbersInRunsOfThree) {
  EXPECT_EQ(llama3_pieces("12345"), (Pieces{"123", "45"}));
  EXPECT_EQ(llama3_pieces(" 42"), (Pieces{" ", "42"}));  // no space before a number
  EXPECT_EQ(llama3_pieces("\xd9\xa3\xd9\xa4\xd9\xa5\xd9\xa6"), (Pieces{"\xd9\xa3\xd9\xa4\xd9\xa5", "\xd9\xa6"}));  // ٣٤٥٦
  EXPECT_EQ(llama3_pieces("x1"), (Pieces{"x", "1"}));
}

TEST(Llama3Pretokenizer, SymbolsTakeTheNewlinesAfterThem) {
  EXPECT_EQ(llama3_pieces("hi!!\n\nthere"), (Pieces{"hi", "!!\n\n", "there"}));
  EXPECT_EQ(llama3_pieces("a ..."), (Pieces{"a", " ..."}));
}

TEST(Llama3Pretokenizer, WhitespaceEndsAfterItsLastNewline) {
  EXPECT_EQ(llama3_pieces("a  \n\n  b"), (Pieces{"a", "  \n\n", " ", " b"}));
  EXPECT_EQ(llama3_pieces("a\r\nb"), (Pieces{"a", "\r\n", "b"}));
  EXPECT_EQ(llama3_pieces("a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(llama3_pieces("end   "), (Pieces{"end", "   "}));
  EXPECT_EQ(llama3_pieces("a \n"), (Pieces{"a", " \n"}));
}

TEST(Llama3Pretokenizer, AnyBytesCutIntoPiecesThatConcatenateToThem) {
  Rng rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string text(static_cast<std::size_t>(rng.below(64)), '\0');
    for (char& c : text) c = static_cast<char>(rng.below(256));
    std::string joined;
    for (const std::string_view p : llama3_pretokenize(text)) {
      ASSERT_FALSE(p.empty());
      joined += p;
    }
    EXPECT_EQ(joined, text);
  }
}

}  // namespace
}  // namespace tessera
