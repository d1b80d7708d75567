// train_gpt picks the tokenizer the data was made with: a BPE corpus of tessera_prepare trains with
// its vocabulary (padded to 64) and its sample decodes; an llm.c shard without a record is GPT-2
// (50257 padded to 50304) and samples print as ids without vocabulary files; headerless nanoGPT
// files need --data-format nanogpt; --tokenizer bytes reads a file of an older tessera_prepare.
// tessera-test-timeout: 240
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tessera/text/data/token_file.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::string run_command(const std::string& command, int* exit_code = nullptr) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) out += buf.data();
  const int status = pclose(pipe);
  if (exit_code != nullptr) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

class TrainGptTokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("TESSERA_BIN_DIR");
    if (bin == nullptr) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    bin_ = bin;
    dir_ = fs::temp_directory_path() / ("train_gpt_tokenizer_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string train(const std::string& args, int* exit_code = nullptr) const {
    return run_command(bin_ + "/train_gpt " + args +
                           " --layers 1 --dim 32 --heads 2 --seq-len 16 --steps 1 "
                           "--micro-batch 2 --eval-every 0 --threads 1 --sample-tokens 12",
                       exit_code);
  }
  static std::vector<std::int32_t> ids(int n, int modulo) {
    std::vector<std::int32_t> out(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = (i * 7919) % modulo;
    return out;
  }

  std::string bin_;
  fs::path dir_;
};

TEST_F(TrainGptTokenizer, BpeCorpusTrainsAndSamplesWithItsVocabulary) {
  {
    std::ofstream text(path("text.txt"));
    for (int i = 0; i < 40; ++i) text << "The cat sat on the mat and the dog sat on the log, " << i << " times.\n";
  }
  int code = -1;
  const std::string prepare = run_command(
      bin_ + "/tessera_prepare --bpe-vocab 280 --out " + path("data/c.bin") + " " + path("text.txt"), &code);
  ASSERT_EQ(code, 0) << prepare;
  const std::string log = train("--data " + path("data/c.bin"), &code);
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("tokenizer: bpe, 280 tokens, " + path("data")), std::string::npos) << log;
  EXPECT_NE(log.find("V=320"), std::string::npos) << "280 padded to a multiple of 64\n" << log;
  EXPECT_NE(log.find("sample:\n---\nThe "), std::string::npos) << log;
}

TEST_F(TrainGptTokenizer, LlmcShardIsGpt2) {
  write_token_file(path("shard.bin"), ids(4000, 50257));
  int code = -1;
  const std::string log = train("--data " + path("shard.bin"), &code);
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("tokenizer: gpt2, 50257 tokens, no vocabulary files"), std::string::npos) << log;
  EXPECT_NE(log.find("V=50304"), std::string::npos) << log;
  EXPECT_NE(log.find("sample (token ids; pass --tokenizer DIR"), std::string::npos) << log;
}

TEST_F(TrainGptTokenizer, NanoGptFilesNeedTheirFormat) {
  write_token_file(path("train.bin"), ids(4000, 50257), TokenFileFormat::kRawUint16);
  // Refused and read with the format, at once (neither writes anything).
  int refused_code = -1, code = -1;
  std::string refused, log;
  std::thread refusing([&] { refused = train("--data " + path("train.bin"), &refused_code); });
  log = train("--data " + path("train.bin") + " --data-format nanogpt", &code);
  refusing.join();
  EXPECT_NE(refused_code, 0);
  EXPECT_NE(refused.find("--data-format nanogpt"), std::string::npos) << refused;
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("tokenizer: gpt2, 50257 tokens"), std::string::npos) << log;
}

TEST_F(TrainGptTokenizer, OlderByteFilesReadWithTokenizerBytes) {
  write_token_file(path("old.bin"), ids(4000, 256));
  int code = -1;
  const std::string log = train("--data " + path("old.bin") + " --tokenizer bytes", &code);
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("tokenizer: bytes, 257 tokens"), std::string::npos) << log;
  EXPECT_NE(log.find("V=320"), std::string::npos) << log;
  EXPECT_NE(log.find("sample:\n---\nThe "), std::string::npos) << log;
}

}  // namespace
}  // namespace tessera
