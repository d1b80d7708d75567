// GPT-2 pre-tokenization by hand against pieces worked out from the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// contractions, a space joining the next word, digit runs, punctuation runs, whitespace that gives
// its last character to the next piece, trailing whitespace, non-ASCII letters and digits, and
// invalid UTF-8; and the pieces of arbitrary bytes always concatenate to the input.
#include "tessera/text/tokenizer/gpt2_pretokenizer.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/text/tokenizer/char_class.hpp"

namespace tessera {
namespace {

std::vector<std::string> gpt2_pieces(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string_view p : gpt2_pretokenize(text)) out.emplace_back(p);
  return out;
}

using Pieces = std::vector<std::string>;

TEST(Gpt2Pretokenizer, WordsTakeTheSpaceBeforeThem) {
  EXPECT_EQ(gpt2_pieces("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(gpt2_pieces(""), Pieces{});
}

TEST(Gpt2Pretokenizer, Contractions) {
  EXPECT_EQ(gpt2_pieces("I'm don't we're they've I'll he'd it's"),
            (Pieces{"I", "'m", " don", "'t", " we", "'re", " they", "'ve", " I", "'ll", " he", "'d", " it", "'s"}));
  // Case-sensitive, as GPT-2's pattern: 'S is not a contraction, the apostrophe is a symbol.
  EXPECT_EQ(gpt2_pieces("IT'S"), (Pieces{"IT", "'", "S"}));
}

TEST(Gpt2Pretokenizer, DigitsAndPunctuation) {
  EXPECT_EQ(gpt2_pieces("price: 1234 dollars!!"), (Pieces{"price", ":", " 1234", " dollars", "!!"}));
  EXPECT_EQ(gpt2_pieces("a1b"), (Pieces{"a", "1", "b"}));
  EXPECT_EQ(gpt2_pieces("x ... (y)"), (Pieces{"x", " ...", " (", "y", ")"}));
}

TEST(Gpt2Pretokenizer, WhitespaceRuns) {
  EXPECT_EQ(gpt2_pieces("a   b"), (Pieces{"a", "  ", " b"}));        // the last space goes with the word
  EXPECT_EQ(gpt2_pieces("a\n\nb"), (Pieces{"a", "\n", "\n", "b"}));  // '\n' is no ' ': it cannot join b
  EXPECT_EQ(gpt2_pieces("a \n b"), (Pieces{"a", " \n", " b"}));
  EXPECT_EQ(gpt2_pieces("end  \n"), (Pieces{"end", "  \n"}));  // trailing whitespace is one piece
  EXPECT_EQ(gpt2_pieces(" "), (Pieces{" "}));
}

TEST(Gpt2Pretokenizer, UnicodeLettersAndNumbers) {
  // é, ö: letters; 日本語: letters (Lo); ٣٤: Arabic-Indic digits (Nd); ½: a number (No).
  EXPECT_EQ(gpt2_pieces("h\xc3\xa9llo w\xc3\xb6rld \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"),
            (Pieces{"h\xc3\xa9llo", " w\xc3\xb6rld", " \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"}));
  EXPECT_EQ(gpt2_pieces("a\xd9\xa3\xd9\xa4 \xc2\xbd"), (Pieces{"a", "\xd9\xa3\xd9\xa4", " \xc2\xbd"}));
  // U+00A0 (no-break space) is whitespace; U+2014 (em dash) a symbol.
  EXPECT_EQ(gpt2_pieces("a\xc2\xa0\xe2\x80\x94"), (Pieces{"a", "\xc2\xa0", "\xe2\x80\x94"}));
}

TEST(Gpt2Pretokenizer, CharacterClassesFromUnicodeData) {
  EXPECT_EQ(char_class(0x00e9), CharClass::kLetter);  // é
  EXPECT_EQ(char_class(0x4e2d), CharClass::kLetter);  // 中
  EXPECT_EQ(char_class(0x0663), CharClass::kNumber);  // ٣
  EXPECT_EQ(char_class(0x2167), CharClass::kNumber);  // Ⅷ (Nl)
  EXPECT_EQ(char_class(0x3000), CharClass::kSpace);   // ideographic space
  EXPECT_EQ(char_class(0x0085), CharClass::kSpace);   // next line
  EXPECT_EQ(char_class(0x001f), CharClass::kOther);   // not White_Space
  EXPECT_EQ(char_class(0x1f600), CharClass::kOther);  // emoji
}

TEST(Gpt2Pretokenizer, InvalidUtf8BytesAreSymbols) {
  EXPECT_EQ(gpt2_pieces("\xff\xfe"
                   "ab \xc3"),
            (Pieces{"\xff\xfe", "ab", " \xc3"}));
  EXPECT_EQ(gpt2_pieces("x\xe6\x97"), (Pieces{"x", "\xe6\x97"}));  // a character cut short
}

TEST(Gpt2Pretokenizer, PiecesOfArbitraryBytesConcatenateToTheInput) {
  Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::string text(static_cast<std::size_t>(rng.below(64)), '\0');
    for (char& c : text) c = static_cast<char>(rng.below(256));
    std::string joined;
    for (const std::string_view p : gpt2_pretokenize(text)) {
      ASSERT_FALSE(p.empty()) << "trial " << trial;
      joined += p;
    }
    ASSERT_EQ(joined, text) << "trial " << trial;
  }
}

}  // namespace
}  // namespace tessera
