// tessera_generate end to end: a corpus tokenized with a learned BPE (tessera_prepare
// --bpe-vocab), a tiny model trained a few steps on 2 ranks at ZeRO 2 and saved, then exported.
// Generation is deterministic for a seed; identical on 1 and 2 ranks and at ZeRO 0 and 3; the
// export gives what the checkpoint gives; --top-k 1 is greedy (--temperature 0, and any seed);
// the text is decoded with the tokenizer the run recorded; bad input fails naming what to change.
// tessera-test-timeout: 240
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/concurrent_runs.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code;
  std::string output;
};

CommandResult run_command(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) out += buf.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class TesseraGenerate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* bin = std::getenv("TESSERA_BIN_DIR");
    if (bin == nullptr) return;
    bin_ = bin;
    dir_ = fs::temp_directory_path() / ("tessera_generate_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream text(dir_ / "text.txt");
    for (int i = 0; i < 60; ++i) {
      text << "The cat sat on the mat " << i << " times; the dog didn't. Caf\xc3\xa9 cr\xc3\xa8me, "
           << "the license grants you the right to copy and share it.\n";
    }
    text.close();
    const std::string d = dir_.string();
    setup_log_ +=
        run_command(bin_ + "/tessera_prepare --bpe-vocab 300 --out " + d + "/data/corpus.bin " + d + "/text.txt 2>&1")
            .output;
    setup_log_ += run_command("mpirun --oversubscribe -np 2 " + bin_ + "/train_gpt --data " + d +
                              "/data/corpus.bin --layers 2 --dim 32 --heads 2 --seq-len 32 --steps 4 --zero 2 "
                              "--micro-batch 2 --threads 1 --sample-tokens 0 --eval-every 0 --log-every 4 "
                              "--checkpoint-dir " +
                              d + "/run --save-every 4 2>&1")
                      .output;
    setup_log_ += run_command(bin_ + "/tessera_ckpt export " + d + "/run " + d + "/model.h5 2>&1").output;
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (bin_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    ASSERT_TRUE(fs::exists(dir_ / "model.h5")) << "setup failed:\n" << setup_log_;
  }

  // The text printed on stdout (progress on stderr is dropped), failing on a non-zero exit.
  static std::string generate(const std::string& args, int ranks = 1) { return generate_all({{args, ranks}})[0]; }
  // The same for several runs (arguments, ranks), at once: they only read the checkpoint and export.
  static std::vector<std::string> generate_all(const std::vector<std::pair<std::string, int>>& runs) {
    std::vector<std::string> commands;
    for (const auto& [args, ranks] : runs) {
      const std::string launcher = ranks > 1 ? "mpirun --oversubscribe -np " + std::to_string(ranks) + " " : "";
      // In double quotes: the arguments hold single-quoted prompts (and no $, `, \\ or ").
      commands.push_back("sh -c \"" + launcher + bin_ + "/tessera_generate " + args + " --threads 1 2>/dev/null\"");
    }
    const std::vector<testing::ProcessResult> results = testing::run_concurrently(commands, 120);
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      EXPECT_EQ(results[i].exit_code, 0) << runs[i].first << "\n" << results[i].output;
      texts.push_back(results[i].output);
    }
    return texts;
  }
  static std::string run_dir() { return (dir_ / "run").string(); }

  static inline std::string bin_, setup_log_;
  static inline fs::path dir_;
};

TEST_F(TesseraGenerate, SameSeedSameTextOtherSeedOtherText) {
  const std::string args = run_dir() + " --prompt 'The cat' --length 40 --temperature 1.0 --seed 7";
  const std::vector<std::string> texts =
      generate_all({{args, 1}, {args, 1}, {run_dir() + " --prompt 'The cat' --length 40 --temperature 1.0 --seed 8", 1}});
  const std::string& first = texts[0];
  EXPECT_EQ(first.rfind("The cat", 0), 0u) << "the prompt starts the output: " << first;
  EXPECT_GT(first.size(), std::string("The cat\n").size());
  EXPECT_EQ(texts[1], first);
  EXPECT_NE(texts[2], first);
}

TEST_F(TesseraGenerate, SameTextOnAnyRankCountAndZeroStage) {
  const std::string args = run_dir() + " --prompt 'the dog' --length 30 --top-k 20 --seed 3";
  const std::vector<std::string> texts =
      generate_all({{args + " --zero 0", 1}, {args + " --zero 0", 2}, {args + " --zero 3", 2}, {args + " --zero 3", 1}});
  const std::string& one = texts[0];
  EXPECT_EQ(texts[1], one) << "2 ranks, ZeRO 0";
  EXPECT_EQ(texts[2], one) << "2 ranks, ZeRO 3";
  EXPECT_EQ(texts[3], one) << "1 rank, ZeRO 3";
}

TEST_F(TesseraGenerate, ExportGivesWhatTheCheckpointGives) {
  const std::string args = " --prompt 'Caf\xc3\xa9' --length 30 --seed 11";
  const std::vector<std::string> texts = generate_all(
      {{(dir_ / "model.h5").string() + args, 1}, {(dir_ / "model.h5").string() + args + " --zero 3", 2}, {run_dir() + args, 1}});
  EXPECT_EQ(texts[0], texts[2]);
  EXPECT_EQ(texts[1], texts[2]);
}

TEST_F(TesseraGenerate, TopKOneIsGreedy) {
  const std::string base = run_dir() + " --prompt 'The' --length 30";
  const std::vector<std::string> texts = generate_all(
      {{base + " --temperature 0", 1}, {base + " --top-k 1 --seed 1", 1}, {base + " --top-k 1 --seed 2 --temperature 2.0", 1}});
  const std::string& greedy = texts[0];
  EXPECT_EQ(texts[1], greedy);
  EXPECT_EQ(texts[2], greedy);
}

TEST_F(TesseraGenerate, BadInputFailsWithAMessage) {
  const std::vector<testing::ProcessResult> refused = testing::run_concurrently(
      {bin_ + "/tessera_generate " + (dir_ / "nowhere").string(),
       bin_ + "/tessera_generate " + run_dir() + " --tokenizer " + dir_.string()},
      120);
  const testing::ProcessResult& missing = refused[0];
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("does not exist"), std::string::npos) << missing.output;
  const testing::ProcessResult& bytes = refused[1];
  EXPECT_NE(bytes.exit_code, 0);
  EXPECT_NE(bytes.output.find("vocab.json"), std::string::npos) << bytes.output;
}

}  // namespace
}  // namespace tessera
