// tessera_generate end to end: a corpus tokenized with a learned BPE (tessera_prepare
// --bpe-vocab), a tiny model trained a few steps on 2 ranks at ZeRO 2 and saved, then exported.
// Generation is deterministic for a seed; identical on 1 and 2 ranks and at ZeRO 0 and 3; the
// export gives what the checkpoint gives; --top-k 1 is greedy (--temperature 0, and any seed);
// the text is decoded with the tokenizer the run recorded; bad input fails naming what to change.
// The tests' runs are queued together once the checkpoint and the export are made.
// tessera-test-timeout: 240
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/queued_runs.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

using CommandResult = testing::ProcessResult;

// A command's exit status and output, bounded in time (run_bounded).
CommandResult run_generate(const std::string& command) { return testing::run_bounded(command, 240); }

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
        run_generate(bin_ + "/tessera_prepare --bpe-vocab 300 --out " + d + "/data/corpus.bin " + d + "/text.txt 2>&1")
            .output;
    setup_log_ += run_generate("mpirun --oversubscribe -np 2 " + bin_ + "/train_gpt --data " + d +
                              "/data/corpus.bin --layers 2 --dim 32 --heads 2 --seq-len 32 --steps 4 --zero 2 "
                              "--micro-batch 2 --threads 1 --sample-tokens 0 --eval-every 0 --log-every 4 "
                              "--checkpoint-dir " +
                              d + "/run --save-every 4 2>&1")
                      .output;
    setup_log_ += run_generate(bin_ + "/tessera_ckpt export " + d + "/run " + d + "/model.h5 2>&1").output;
    queue_runs();
  }
  static void TearDownTestSuite() {
    runs_.reset();  // before the files it runs on
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // The tests' runs only read the checkpoint and the export: queued together (QueuedRuns) once they
  // are made; each test collects its own.
  static void queue_runs() {
    runs_ = std::make_unique<testing::QueuedRuns>();
    // SameSeedSameTextOtherSeedOtherText
    const std::string cat = run_dir() + " --prompt 'The cat' --length 40 --temperature 1.0";
    queue_generate("seed 7", cat + " --seed 7");
    queue_generate("seed 7 again", cat + " --seed 7");
    queue_generate("seed 8", cat + " --seed 8");
    // SameTextOnAnyRankCountAndZeroStage
    const std::string dog = run_dir() + " --prompt 'the dog' --length 30 --top-k 20 --seed 3";
    queue_generate("1 rank, ZeRO 0", dog + " --zero 0");
    queue_generate("2 ranks, ZeRO 0", dog + " --zero 0", 2);
    queue_generate("2 ranks, ZeRO 3", dog + " --zero 3", 2);
    queue_generate("1 rank, ZeRO 3", dog + " --zero 3");
    // ExportGivesWhatTheCheckpointGives
    const std::string cafe = " --prompt 'Caf\xc3\xa9' --length 30 --seed 11";
    queue_generate("export", (dir_ / "model.h5").string() + cafe);
    queue_generate("export, 2 ranks, ZeRO 3", (dir_ / "model.h5").string() + cafe + " --zero 3", 2);
    queue_generate("checkpoint", run_dir() + cafe);
    // TopKOneIsGreedy
    const std::string the = run_dir() + " --prompt 'The' --length 30";
    queue_generate("temperature 0", the + " --temperature 0");
    queue_generate("top-k 1", the + " --top-k 1 --seed 1");
    queue_generate("top-k 1, temperature 2", the + " --top-k 1 --seed 2 --temperature 2.0");
    // BadInputFailsWithAMessage
    runs_->queue("missing", bin_ + "/tessera_generate " + (dir_ / "nowhere").string());
    runs_->queue("bytes", bin_ + "/tessera_generate " + run_dir() + " --tokenizer " + dir_.string());
  }
  // Queues tessera_generate with `args` on `ranks` ranks; its text is printed on stdout (progress on
  // stderr is dropped).
  static void queue_generate(const std::string& key, const std::string& args, int ranks = 1) {
    const std::string launcher = ranks > 1 ? "mpirun --oversubscribe -np " + std::to_string(ranks) + " " : "";
    // In double quotes: the arguments hold single-quoted prompts (and no $, `, \\ or ").
    runs_->queue(key, "sh -c \"" + launcher + bin_ + "/tessera_generate " + args + " --threads 1 2>/dev/null\"");
  }
  // The text the run queued as `key` printed, failing on a non-zero exit.
  static std::string text(const std::string& key) {
    const testing::ProcessResult& r = runs_->result(key);
    EXPECT_EQ(r.exit_code, 0) << key << "\n" << r.output;
    return r.output;
  }
  void SetUp() override {
    if (bin_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    ASSERT_TRUE(fs::exists(dir_ / "model.h5")) << "setup failed:\n" << setup_log_;
  }

  static std::string run_dir() { return (dir_ / "run").string(); }

  static inline std::string bin_, setup_log_;
  static inline std::unique_ptr<testing::QueuedRuns> runs_;
  static inline fs::path dir_;
};

TEST_F(TesseraGenerate, SameSeedSameTextOtherSeedOtherText) {
  const std::string first = text("seed 7");
  EXPECT_EQ(first.rfind("The cat", 0), 0u) << "the prompt starts the output: " << first;
  EXPECT_GT(first.size(), std::string("The cat\n").size());
  EXPECT_EQ(text("seed 7 again"), first);
  EXPECT_NE(text("seed 8"), first);
}

TEST_F(TesseraGenerate, SameTextOnAnyRankCountAndZeroStage) {
  const std::string one = text("1 rank, ZeRO 0");
  EXPECT_EQ(text("2 ranks, ZeRO 0"), one) << "2 ranks, ZeRO 0";
  EXPECT_EQ(text("2 ranks, ZeRO 3"), one) << "2 ranks, ZeRO 3";
  EXPECT_EQ(text("1 rank, ZeRO 3"), one) << "1 rank, ZeRO 3";
}

TEST_F(TesseraGenerate, ExportGivesWhatTheCheckpointGives) {
  const std::string checkpoint = text("checkpoint");
  EXPECT_EQ(text("export"), checkpoint);
  EXPECT_EQ(text("export, 2 ranks, ZeRO 3"), checkpoint);
}

TEST_F(TesseraGenerate, TopKOneIsGreedy) {
  const std::string greedy = text("temperature 0");
  EXPECT_EQ(text("top-k 1"), greedy);
  EXPECT_EQ(text("top-k 1, temperature 2"), greedy);
}

TEST_F(TesseraGenerate, BadInputFailsWithAMessage) {
  const testing::ProcessResult& missing = runs_->result("missing");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("does not exist"), std::string::npos) << missing.output;
  const testing::ProcessResult& bytes = runs_->result("bytes");
  EXPECT_NE(bytes.exit_code, 0);
  EXPECT_NE(bytes.output.find("vocab.json"), std::string::npos) << bytes.output;
}

}  // namespace
}  // namespace tessera
