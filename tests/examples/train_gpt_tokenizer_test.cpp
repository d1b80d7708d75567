// train_gpt picks the tokenizer the data was made with: a BPE corpus of tessera_prepare trains with
// its vocabulary (padded to 64) and its sample decodes; an llm.c shard without a record is GPT-2
// (50257 padded to 50304) and samples print as ids without vocabulary files; headerless nanoGPT
// files need --data-format nanogpt; --tokenizer bytes reads a file of an older tessera_prepare.
// The tests' runs are independent: queued together when the suite starts, each test checks its own.
// tessera-test-timeout: 240
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tessera/text/data/token_file.hpp"
#include "tests/support/queued_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::ProcessResult;

class TrainGptTokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* bin = std::getenv("TESSERA_BIN_DIR");
    if (bin == nullptr) return;
    bin_ = bin;
    dir_ = std::make_unique<testing::ScratchDir>("train_gpt_tokenizer");
    runs_ = std::make_unique<testing::QueuedRuns>();
    // BpeCorpusTrainsAndSamplesWithItsVocabulary: tessera_prepare learns a BPE, then train_gpt trains.
    {
      std::ofstream text(path("text.txt"));
      for (int i = 0; i < 40; ++i) text << "The cat sat on the mat and the dog sat on the log, " << i << " times.\n";
    }
    runs_->queue("bpe", [] {
      std::vector<ProcessResult> results{testing::run_bounded(
          bin_ + "/tessera_prepare --bpe-vocab 280 --out " + path("data/c.bin") + " " + path("text.txt"), 240)};
      if (results[0].exit_code == 0) {
        results.push_back(testing::run_bounded(train("--data " + path("data/c.bin")), 240));
      }
      return results;
    });
    // LlmcShardIsGpt2
    write_token_file(path("shard.bin"), ids(4000, 50257));
    runs_->queue("llmc", train("--data " + path("shard.bin")), 240);
    // NanoGptFilesNeedTheirFormat: refused, and read with the format.
    write_token_file(path("train.bin"), ids(4000, 50257), TokenFileFormat::kRawUint16);
    runs_->queue("nanogpt refused", train("--data " + path("train.bin")), 240);
    runs_->queue("nanogpt", train("--data " + path("train.bin") + " --data-format nanogpt"), 240);
    // OlderByteFilesReadWithTokenizerBytes
    write_token_file(path("old.bin"), ids(4000, 256));
    runs_->queue("bytes", train("--data " + path("old.bin") + " --tokenizer bytes"), 240);
  }
  static void TearDownTestSuite() {
    runs_.reset();  // before the files it runs on
    dir_.reset();
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  // The command line of train_gpt with `args`, one step, sampling 12 tokens.
  static std::string train(const std::string& args) {
    return bin_ + "/train_gpt " + args +
           " --layers 1 --dim 32 --heads 2 --seq-len 16 --steps 1 "
           "--micro-batch 2 --eval-every 0 --threads 1 --sample-tokens 12";
  }
  static std::vector<std::int32_t> ids(int n, int modulo) {
    std::vector<std::int32_t> out(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = (i * 7919) % modulo;
    return out;
  }

  static inline std::string bin_;
  static inline std::unique_ptr<testing::ScratchDir> dir_;
  static inline std::unique_ptr<testing::QueuedRuns> runs_;
};

TEST_F(TrainGptTokenizer, BpeCorpusTrainsAndSamplesWithItsVocabulary) {
  const std::vector<ProcessResult>& runs = runs_->results("bpe");
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].output;
  const ProcessResult& trained = runs.at(1);
  const std::string& log = trained.output;
  ASSERT_EQ(trained.exit_code, 0) << log;
  EXPECT_NE(log.find("tokenizer: bpe, 280 tokens, " + path("data")), std::string::npos) << log;
  EXPECT_NE(log.find("V=320"), std::string::npos) << "280 padded to a multiple of 64\n" << log;
  EXPECT_NE(log.find("sample:\n---\nThe "), std::string::npos) << log;
}

TEST_F(TrainGptTokenizer, LlmcShardIsGpt2) {
  const ProcessResult& trained = runs_->result("llmc");
  const std::string& log = trained.output;
  ASSERT_EQ(trained.exit_code, 0) << log;
  EXPECT_NE(log.find("tokenizer: gpt2, 50257 tokens, no vocabulary files"), std::string::npos) << log;
  EXPECT_NE(log.find("V=50304"), std::string::npos) << log;
  EXPECT_NE(log.find("sample (token ids; pass --tokenizer DIR"), std::string::npos) << log;
}

TEST_F(TrainGptTokenizer, NanoGptFilesNeedTheirFormat) {
  const ProcessResult& refused = runs_->result("nanogpt refused");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("--data-format nanogpt"), std::string::npos) << refused.output;
  const ProcessResult& trained = runs_->result("nanogpt");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_NE(trained.output.find("tokenizer: gpt2, 50257 tokens"), std::string::npos) << trained.output;
}

TEST_F(TrainGptTokenizer, OlderByteFilesReadWithTokenizerBytes) {
  const ProcessResult& trained = runs_->result("bytes");
  const std::string& log = trained.output;
  ASSERT_EQ(trained.exit_code, 0) << log;
  EXPECT_NE(log.find("tokenizer: bytes, 257 tokens"), std::string::npos) << log;
  EXPECT_NE(log.find("V=320"), std::string::npos) << log;
  EXPECT_NE(log.find("sample:\n---\nThe "), std::string::npos) << log;
}

}  // namespace
}  // namespace tessera
