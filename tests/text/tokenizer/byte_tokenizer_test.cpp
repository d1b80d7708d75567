// Tests for ByteTokenizer: round trips of ASCII, multi-byte UTF-8 and every byte value, the
// end-of-text token, and ids outside the vocabulary.
#include "tessera/text/tokenizer/byte_tokenizer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {
namespace {

TEST(ByteTokenizer, VocabularyIsBytesPlusEndOfText) {
  const ByteTokenizer tokenizer;
  EXPECT_EQ(tokenizer.vocab_size(), 257);
  EXPECT_EQ(tokenizer.end_of_text(), 256);
  EXPECT_EQ(ByteTokenizer::kEndOfText, 256);
}

TEST(ByteTokenizer, AsciiRoundTrip) {
  const ByteTokenizer tokenizer;
  const std::string text = "Hello, world!\n\tTabs & 123";
  const std::vector<std::int32_t> tokens = tokenizer.encode(text);
  ASSERT_EQ(tokens.size(), text.size());
  EXPECT_EQ(tokens[0], 72);   // 'H'
  EXPECT_EQ(tokens[1], 101);  // 'e'
  EXPECT_EQ(tokens[13], 10);  // '\n'
  EXPECT_EQ(tokenizer.decode(tokens), text);
}

TEST(ByteTokenizer, Utf8MultiByteIsOneTokenPerByte) {
  const ByteTokenizer tokenizer;
  const std::string text = "h\xC3\xA9llo \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x8E\x89";  // "héllo 日本 🎉"
  const std::vector<std::int32_t> tokens = tokenizer.encode(text);
  ASSERT_EQ(tokens.size(), 18u);  // 1 + 2 + 3 + 1 + 6 + 1 + 4 bytes
  EXPECT_EQ(tokens[1], 0xC3) << "first byte of U+00E9";
  EXPECT_EQ(tokens[2], 0xA9) << "second byte of U+00E9";
  EXPECT_EQ(tokens[14], 0xF0) << "first byte of U+1F389";
  EXPECT_EQ(tokens[17], 0x89) << "last byte of U+1F389";
  EXPECT_EQ(tokenizer.decode(tokens), text);
}

TEST(ByteTokenizer, AllByteValuesRoundTrip) {
  const ByteTokenizer tokenizer;
  std::string text;
  for (int b = 0; b < 256; ++b) text.push_back(static_cast<char>(b));
  const std::vector<std::int32_t> tokens = tokenizer.encode(text);
  ASSERT_EQ(tokens.size(), 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(tokens[b], b) << "byte value " << b;
  const std::string decoded = tokenizer.decode(tokens);
  ASSERT_EQ(decoded.size(), 256u);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(static_cast<unsigned char>(decoded[b]), b) << "decoded byte " << b;
  }
}

TEST(ByteTokenizer, EndOfTextDecodesToBlankLine) {
  const ByteTokenizer tokenizer;
  const std::vector<std::int32_t> tokens = {'a', ByteTokenizer::kEndOfText, 'b'};
  EXPECT_EQ(tokenizer.decode(tokens), "a\n\nb");
  EXPECT_EQ(tokenizer.decode_token(ByteTokenizer::kEndOfText), "\n\n");
  // Documents joined by end-of-text encode and decode back, the separator showing as a blank line.
  std::vector<std::int32_t> joined = tokenizer.encode("first");
  joined.push_back(ByteTokenizer::kEndOfText);
  tokenizer.encode_append("second", joined);
  ASSERT_EQ(joined.size(), 12u);
  EXPECT_EQ(joined[5], 256);
  EXPECT_EQ(tokenizer.decode(joined), "first\n\nsecond");
}

TEST(ByteTokenizer, IdsOutsideVocabularyDecodeToQuestionMark) {
  const ByteTokenizer tokenizer;
  const std::vector<std::int32_t> tokens = {-1, 257, 320, 65535, 'x'};
  EXPECT_EQ(tokenizer.decode(tokens), "????x");
}

TEST(ByteTokenizer, EmptyText) {
  const ByteTokenizer tokenizer;
  EXPECT_TRUE(tokenizer.encode("").empty());
  EXPECT_EQ(tokenizer.decode({}), "");
}

}  // namespace
}  // namespace tessera
