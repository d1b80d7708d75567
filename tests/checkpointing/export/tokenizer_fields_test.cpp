// The tokenizer fields a checkpoint records read back strictly: a vocabulary or hash with trailing
// text, a sign or out of range is refused naming the field, never read as its leading digits.
#include "tessera/checkpointing/export/tokenizer_fields.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

RunConfig with_run(const std::string& vocab, const std::string& hash) {
  RunConfig config;
  config.set_run("tokenizer", std::string("bpe"));
  config.set_run("tokenizer_vocab", vocab);
  config.set_run("tokenizer_hash", hash);
  return config;
}

TEST(TokenizerFields, RecordedFieldsRoundTrip) {
  RunConfig config;
  add_tokenizer(config, TokenizerSpec{TokenizerKind::kBpe, "", 512, 0x0123456789abcdefULL});
  const auto spec = stored_tokenizer(config);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->vocab_size, 512);
  EXPECT_EQ(spec->files_hash, 0x0123456789abcdefULL);
}

TEST(TokenizerFields, AHuggingFaceTokenizerRoundTrips) {
  RunConfig config;
  add_tokenizer(config, TokenizerSpec{TokenizerKind::kHf, "/data/tok/tokenizer.json", 128256, 0xfeedULL});
  const auto spec = stored_tokenizer(config);
  ASSERT_TRUE(spec);
  EXPECT_EQ(*spec, (TokenizerSpec{TokenizerKind::kHf, "/data/tok/tokenizer.json", 128256, 0xfeedULL}));
}

TEST(TokenizerFields, FieldsThatDoNotParseWhollyAreRefusedByName) {
  const std::pair<RunConfig, std::string> cases[] = {
      {with_run("512abc", "00ff"), "run.tokenizer_vocab = '512abc'"},
      {with_run("4294967808", "00ff"), "run.tokenizer_vocab = '4294967808'"},  // stoi wrapped or threw
      {with_run("-1", "00ff"), "run.tokenizer_vocab = '-1'"},
      {with_run("512", "xyz"), "run.tokenizer_hash = 'xyz'"},
      {with_run("512", "-1"), "run.tokenizer_hash = '-1'"}};
  for (const auto& [config, field] : cases) {
    try {
      stored_tokenizer(config);
      ADD_FAILURE() << field << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera
