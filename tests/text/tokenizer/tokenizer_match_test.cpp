// tokenizer_difference: kind and size must match; vocabulary hashes must match where both are
// recorded; where the files live does not matter.
#include "tessera/text/tokenizer/tokenizer_match.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(TokenizerMatch, KindSizeAndFiles) {
  const TokenizerSpec bytes = bytes_tokenizer_spec();
  TokenizerSpec bpe{TokenizerKind::kBpe, "/a", 300, 0x11};
  EXPECT_FALSE(tokenizer_difference(bytes, bytes_tokenizer_spec()));
  EXPECT_EQ(tokenizer_difference(bytes, bpe).value_or(""), "bytes with 257 tokens vs bpe with 300 tokens");
  TokenizerSpec moved = bpe;
  moved.dir = "/elsewhere";
  EXPECT_FALSE(tokenizer_difference(bpe, moved));
  TokenizerSpec unknown_files = bpe;
  unknown_files.files_hash = 0;
  EXPECT_FALSE(tokenizer_difference(bpe, unknown_files));
  TokenizerSpec other_files = bpe;
  other_files.files_hash = 0x22;
  EXPECT_NE(tokenizer_difference(bpe, other_files).value_or("").find("vocabulary files differ"), std::string::npos);
  TokenizerSpec bigger = bpe;
  bigger.vocab_size = 301;
  EXPECT_TRUE(tokenizer_difference(bpe, bigger));
}

}  // namespace
}  // namespace tessera
