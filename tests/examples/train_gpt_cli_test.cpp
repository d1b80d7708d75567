// train_gpt end to end through its command line: bad input exits non-zero with a message naming
// the option and what to change; a short run on one process and a ZeRO-3 run on two ranks log the
// same losses for the same global batch; the pre-flight memory check stops, before allocating, a
// run that cannot fit (under a process memory limit, and a micro-batch no machine holds), with the
// prediction by category and the advisor's suggestion; every line a run prints is under 100
// characters.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/core/wrapped_line.hpp"
#include "tessera/text/data/token_file.hpp"
#include "tests/support/queued_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using CommandResult = testing::ProcessResult;

// The bad input of RejectsBadInputWithAMessage and the message each must give.
struct BadInput {
  std::string args, message;
};
const std::vector<BadInput> kBadInputs = {
    {"--no-such-option 1", "unrecognised option '--no-such-option'"},
    {"", "--dim 30 is not divisible by --heads 4"},
    {"--zero 5", "--zero 5: the ZeRO stage must be 0, 1, 2 or 3"},
    {"--prefetch -1", "--prefetch -1: must be >= 0"},
    {"--global-batch 10 --micro-batch 4", "global 10 is not divisible by micro 4 x ranks 1 = 4"},
    {"--reduce-dtype f8", "--reduce-dtype: unknown dtype 'f8'"},
    {"--data /nonexistent/tokens.bin", "/nonexistent/tokens.bin"},
    {"--activation-checkpointing sometimes", "--activation-checkpointing"},
};

// The tests' runs are independent: queued together when the suite starts (QueuedRuns), each under
// a time bound (a hung program fails the test instead of hanging it); each test checks its own.
class TrainGptCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* bin = std::getenv("TESSERA_BIN_DIR");
    if (bin == nullptr) return;
    train_gpt_ = std::string(bin) + "/train_gpt";
    dir_ = std::make_unique<testing::ScratchDir>("cli");  // short paths: EveryLineOfARun...
    short_dir_ = std::make_unique<testing::ScratchDir>("w");
    data_ = (*dir_ / "tokens.bin").string();
    write_token_file(data_, testing::random_tokens(20000, 40, 3));
    runs_ = std::make_unique<testing::QueuedRuns>();
    queue_runs();
  }
  static void TearDownTestSuite() {
    runs_.reset();  // before the files it runs on
    dir_.reset();
    short_dir_.reset();
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }

  static void queue_runs() {
    const auto queue = [](const std::string& key, const std::string& command) { runs_->queue(key, command, 240); };
    for (std::size_t i = 0; i < kBadInputs.size(); ++i) {  // RejectsBadInputWithAMessage
      const std::string shape = kBadInputs[i].args.empty() ? "--dim 30 --heads 4" : "--dim 32 --heads 2";
      queue("bad" + std::to_string(i), train_gpt_ + tiny(shape) + " --steps 1 " + kBadInputs[i].args);
    }
    // TwoRanksWithZero3LogTheLossesOfOneProcess
    queue("single", train_gpt_ + tiny() + " --steps 3 --global-batch 4 --micro-batch 4");
    queue("sharded", "mpirun --oversubscribe -np 2 " + train_gpt_ + tiny() +
                         " --steps 3 --global-batch 4 --micro-batch 1 --zero 3");
    // MemoryCheckStopsARunThatCannotFitUnderAProcessLimit: a 1 GB data-segment limit; micro 512 of
    // the default model needs several GB of activations.
    queue("limit", "bash -c 'ulimit -d 1000000; exec " + train_gpt_ + " --data " + data_ +
                       " --vocab 64 --micro-batch 512 --steps 1 --sample-tokens 0 --threads 1'");
    // MemoryCheckStopsAMicroBatchNoMachineHolds
    queue("huge micro-batch", train_gpt_ + tiny() + " --micro-batch 100000000 --steps 1");
    // MemoryCheckReportsWhatFitsAndCanBeSkipped
    queue("checked", train_gpt_ + tiny() + " --steps 1 --micro-batch 2");
    queue("skipped", train_gpt_ + tiny() + " --steps 1 --micro-batch 2 --no-memory-check");
    // EveryLineOfARunIsUnderOneHundredCharacters: short paths ("/tmp/tessera_w_XXXXXX/c").
    std::string flags = tiny();
    flags.replace(flags.find("--eval-every 0"), 14, "--eval-every 2");
    flags += " --steps 4 --eval-batches 1 --val-data " + data_ + " --checkpoint-dir " + (*short_dir_ / "c").string() +
             " --metrics " + (*short_dir_ / "m.jsonl").string();
    queue("every line", train_gpt_ + flags);
  }

  static std::string tiny(const std::string& shape = "--dim 32 --heads 2") {
    return " --data " + data_ + " --layers 2 " + shape +
           " --seq-len 16 --vocab 64 --sample-tokens 0 "
           "--eval-every 0 --log-every 1 --threads 1";
  }
  static const CommandResult& result(const std::string& key) { return runs_->result(key); }

  static inline std::string train_gpt_, data_;
  static inline std::unique_ptr<testing::ScratchDir> dir_, short_dir_;
  static inline std::unique_ptr<testing::QueuedRuns> runs_;
};

std::vector<std::string> losses(const std::string& log) {
  std::vector<std::string> out;
  const std::regex line(R"(step +[0-9]+/[0-9]+  loss ([0-9.]+)  )");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

TEST_F(TrainGptCli, RejectsBadInputWithAMessage) {
  for (std::size_t i = 0; i < kBadInputs.size(); ++i) {
    const BadInput& c = kBadInputs[i];
    const CommandResult& r = result("bad" + std::to_string(i));
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\nexpected: " << c.message << "\n" << r.output;
  }
}

TEST_F(TrainGptCli, TwoRanksWithZero3LogTheLossesOfOneProcess) {
  const CommandResult& single = result("single");
  const CommandResult& sharded = result("sharded");
  ASSERT_EQ(single.exit_code, 0) << single.output;
  EXPECT_NE(single.output.find("global batch 4 sequences = micro 4 x ranks 1 x accumulation 1"), std::string::npos)
      << single.output;
  ASSERT_EQ(sharded.exit_code, 0) << sharded.output;
  EXPECT_NE(sharded.output.find("micro 1 x ranks 2 x accumulation 2"), std::string::npos) << sharded.output;
  const auto a = losses(single.output), b = losses(sharded.output);
  ASSERT_EQ(a.size(), 3u) << single.output;
  EXPECT_EQ(a, b) << "one process:\n" << single.output << "\ntwo ranks:\n" << sharded.output;
}

TEST_F(TrainGptCli, MemoryCheckStopsARunThatCannotFitUnderAProcessLimit) {
  const CommandResult& r = result("limit");  // micro 512 of the default model under a 1 GB limit
  EXPECT_EQ(r.exit_code, 3) << r.output;
  for (const char* part : {"memory check: this run will not fit", "predicted peak", "data-segment limit (RLIMIT_DATA)",
                           "activations", "recommended:"}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << r.output;
  }
  // The suggestion names train_gpt by its real path, so it runs as printed from any directory.
  const std::string suggestion = "try: " + std::filesystem::canonical(train_gpt_).string() + " --layers ";
  EXPECT_NE(r.output.find(suggestion), std::string::npos) << "missing '" << suggestion << "' in\n" << r.output;
  EXPECT_EQ(r.output.find("step     1"), std::string::npos) << "it trained anyway:\n" << r.output;
}

TEST_F(TrainGptCli, MemoryCheckStopsAMicroBatchNoMachineHolds) {
  const CommandResult& r = result("huge micro-batch");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("memory check: this run will not fit"), std::string::npos) << r.output;
  // What the advisor says depends on the machine: the same global batch with accumulation, or that
  // the global batch's token buffers alone exceed the memory.
  const bool advised =
      r.output.find("recommended:") != std::string::npos || r.output.find("token buffers alone") != std::string::npos;
  EXPECT_TRUE(advised) << r.output;
}

TEST_F(TrainGptCli, MemoryCheckReportsWhatFitsAndCanBeSkipped) {
  const CommandResult& checked = result("checked");
  const CommandResult& skipped = result("skipped");
  ASSERT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("memory check: predicted peak"), std::string::npos) << checked.output;
  ASSERT_EQ(skipped.exit_code, 0) << skipped.output;
  EXPECT_EQ(skipped.output.find("memory check"), std::string::npos) << skipped.output;
}

TEST_F(TrainGptCli, EveryLineOfARunIsUnderOneHundredCharacters) {
  // Everything a run prints but the generated sample (model output, not formatted text): the start-up
  // lines with the memory check, validation, the tokenizer note of a file that records none, a
  // checkpoint, the metrics file, the memory table. Wide lines wrap between their parts. The paths
  // are short ("/tmp/tessera_w_XXXXXX/c"): a line holding a path is as wide as the path makes it.
  const CommandResult& r = result("every line");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    EXPECT_LE(line.size(), kConsoleLineWidth) << "line " << count + 1 << " is wider:\n" << line;
  }
  EXPECT_GE(count, 20) << r.output;
  for (const char* part : {"memory check: predicted peak", " available (", "train_gpt: GPT L=2 C=32", "BLAS core ",
                           "validation: ", "the data records no tokenizer", "tokens per step at seq_len 16",
                           "step     4/4  loss", "step     4 | val loss", "checkpoint: saved step 4", "metrics: ",
                           "memory of rank 0:"}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << r.output;
  }
}

}  // namespace
}  // namespace tessera
