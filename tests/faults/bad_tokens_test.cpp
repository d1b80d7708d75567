// Token ids outside the model's vocabulary: the data check finds the first one (file, id, position)
// in a vectorised scan, and train_gpt refuses such data at start, naming the file, the id, its
// position, the vocabulary and --vocab, before any step runs (the embedding would index past its
// table). Ids exactly at the limit and files of only good ids pass.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/core/setting_error.hpp"
#include "tessera/text/data/token_id_check.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::ScratchDir;
using testing::tiny_run;
using testing::train_gpt_binary;

TEST(BadTokens, FindsTheFirstIdOutsideTheVocabularyInAnyBlock) {
  std::vector<std::uint16_t> tokens(300000, 5);
  EXPECT_FALSE(find_token_outside_vocab(tokens, 6)) << "all ids are 5 < 6";
  tokens[200001] = 6;  // third block of 65536
  tokens[250000] = 9000;
  const auto bad = find_token_outside_vocab(tokens, 6);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->position, 200001);
  EXPECT_EQ(bad->id, 6);
  EXPECT_FALSE(find_token_outside_vocab(tokens, 9001)) << "the largest id is 9000";
  EXPECT_FALSE(find_token_outside_vocab(tokens, 70000)) << "every uint16 id fits a vocabulary above 65535";
  EXPECT_TRUE(find_token_outside_vocab(tokens, 0)) << "nothing fits an empty vocabulary";
}

TEST(BadTokens, DatasetCheckNamesTheFileTheIdAndItsPosition) {
  ScratchDir dir("bad_tokens");
  const std::string good = (dir / "a.bin").string(), bad = (dir / "b.bin").string();
  write_token_file(good, random_tokens(1000, 64));
  std::vector<std::int32_t> tokens = random_tokens(1000, 64);
  tokens[777] = 50256;  // a GPT-2 id in data for a 64-id model
  write_token_file(bad, tokens);
  EXPECT_NO_THROW(check_token_ids(TokenDataset(good), 64));
  try {
    check_token_ids(TokenDataset(std::vector<std::string>{good, bad}), 64);
    FAIL() << "a file with token 50256 passed the check against vocabulary 64";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "model.vocab_size");
    for (const std::string& part : std::vector<std::string>{bad, "token id 50256", "position 777",
                                                            "vocabulary of 64 ids", "at least 50257", "tokenizer"}) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "missing '" << part << "' in: " << e.what();
    }
  }
}

TEST(BadTokens, TrainGptRefusesDataOutsideTheVocabularyBeforeTraining) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  ScratchDir dir("bad_tokens_cli");
  std::vector<std::int32_t> tokens = random_tokens(20000, 40);
  tokens[12345] = 300;
  const std::string data = (dir / "tokens.bin").string();
  write_token_file(data, tokens);
  // The validation file is checked too; a vocabulary that holds id 300 accepts the same file. (The
  // three runs share nothing and start together.)
  const std::string good = (dir / "good.bin").string();
  write_token_file(good, random_tokens(20000, 40));
  const std::vector<testing::ProcessResult> runs = testing::run_bounded_all({
      train_gpt + tiny_run(data) + " --steps 2",
      train_gpt + tiny_run(good) + " --val-data " + data + " --steps 1",
      train_gpt + tiny_run(data, 320) + " --steps 1",
  });
  const auto &r = runs[0], &val = runs[1], &wide = runs[2];
  EXPECT_NE(r.exit_code, 0) << r.output;
  for (const std::string& part :
       std::vector<std::string>{"--vocab 64: " + data, "token id 300", "position 12345", "at least 301"}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << r.output;
  }
  EXPECT_EQ(r.output.find("step     1"), std::string::npos) << "it trained on bad ids:\n" << r.output;

  EXPECT_NE(val.exit_code, 0) << val.output;
  EXPECT_NE(val.output.find(data + " holds token id 300"), std::string::npos) << val.output;
  EXPECT_EQ(wide.exit_code, 0) << wide.output;
}

}  // namespace
}  // namespace tessera
