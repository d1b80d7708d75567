// train_gpt --model llama end to end, as the GPT is held to: ZeRO 0-3, activation checkpointing and
// CPU offload give the same losses bit for bit as one process; a checkpoint saved by 2 ranks at ZeRO-3 resumes
// on 1 rank at ZeRO-1 and continues with the losses of the uninterrupted run; on the default corpus,
// with 2 ranks, its loss falls as the GPT's does, with AdamW and 8-bit AdamW; mismatched flags are refused.
// The tests' runs are queued together when the suite starts; each test checks its own.
// tessera-test-timeout: 240
// tessera-test-cost: 8
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/queued_runs.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::losses_of;
using testing::ProcessResult;
using testing::set_flag;

// The tests' runs are independent but for a resume after the run that saved (queued as one task):
// they are queued together when the suite starts (QueuedRuns) and each test checks its own.
class TrainLlama : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    files_ = std::make_unique<testing::TrainGptSuiteFiles>("train_llama", 40000, 60);
    if (files_->train_gpt.empty()) return;
    runs_ = std::make_unique<testing::QueuedRuns>();
    // ZeroStagesAndCheckpointingMatchOneProcessBitForBit
    for (const auto& [ranks, name, extra] : kStageRuns) queue_llama(ranks, name, extra);
    // ResumesOnAnotherRankCountAndStageBitForBit: the uninterrupted run; the first part, saved at
    // step 4, then the rest on 1 rank at ZeRO-1.
    queue_llama(2, "straight", "--steps 8 --zero 3");
    const std::string ckpt = (files_->dir / "ckpt").string();
    runs_->queue("first, resumed", [ckpt] {
      std::vector<ProcessResult> results{testing::run_bounded(files_->launch_command(
          2, "first", llama_flags() + " --steps 4 --zero 3 --save-every 4 --checkpoint-dir " + ckpt))};
      if (results[0].exit_code == 0) {
        results.push_back(testing::run_bounded(files_->launch_command(
            1, "resumed", llama_flags() + " --steps 8 --zero 1 --checkpoint-dir " + ckpt + " --resume auto")));
      }
      return results;
    });
    // LossFallsOnTheDefaultCorpusAsTheGptsDoes: the default corpus as a first run makes it
    // (tessera_prepare over the system's license texts), then GPT, Llama and Llama with 8-bit AdamW.
    const std::string corpus = (files_->dir / "corpus.bin").string();
    const std::string bin_dir = std::filesystem::path(files_->train_gpt).parent_path().string();
    prepared_ = testing::run_bounded(bin_dir + "/tessera_prepare --out " + corpus, 120);
    const auto corpus_run = [&](const std::string& model, const std::string& name, const std::string& extra = "") {
      runs_->queue(name,
                   files_->launch_command(2, name,
                                          " --data " + corpus + " --model " + model +
                                              " --layers 2 --dim 64 --heads 4 --seq-len 64 --steps 60"
                                              " --global-batch 8 --micro-batch 4 --warmup 10 --sample-tokens 0"
                                              " --eval-every 0 --log-every 1 --threads 1" +
                                              extra),
                   150);
    };
    corpus_run("gpt2", "gpt");
    corpus_run("llama", "llama");
    corpus_run("llama", "llama8bit", " --zero 2 --optimizer adamw8bit");
    // TrainsOnUint32TokenFiles
    const std::string wide = (files_->dir / "wide.bin").string();
    write_token_file(wide, testing::random_tokens(20000, 70000));
    runs_->queue("wide", files_->train_gpt + set_flag(set_flag(llama_flags(), "--data", wide), "--vocab", "70016") +
                             " --steps 2 --metrics " + files_->metrics_path("wide"));
    // RefusesFlagsThatDoNotFitTheModel
    runs_->queue("kv-heads 3", files_->train_gpt + set_flag(llama_flags(), "--kv-heads", "3") + " --steps 1", 60);
    runs_->queue("gpt kv-heads", files_->train_gpt + " --data " + files_->data + " --steps 1 --kv-heads 2", 60);
  }
  static void TearDownTestSuite() {
    runs_.reset();  // before the files it runs on
    files_.reset();
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }

  // A tiny Llama with grouped-query attention (4 heads, 2 key/value heads) over the test's tokens.
  static std::string llama_flags() {
    return " --data " + files_->data +
           " --model llama --layers 2 --dim 32 --heads 4 --kv-heads 2 --ffn-dim 48 --seq-len 16 --vocab 64"
           " --global-batch 4 --micro-batch 2 --sample-tokens 0 --eval-every 0 --log-every 1 --threads 1"
           " --no-memory-check";
  }
  // Queues the tiny Llama on `ranks` ranks with `extra` flags, its metrics in metrics_path(name).
  static void queue_llama(int ranks, const std::string& name, const std::string& extra) {
    runs_->queue(name, files_->launch_command(ranks, name, llama_flags() + " " + extra));
  }
  // The losses of the run queued as `name`; fails the test (naming it, with its output) when it
  // did not finish.
  static std::vector<std::string> losses(const std::string& name) {
    const ProcessResult& r = runs_->result(name);
    EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.output;
    return losses_of(files_->metrics_path(name));
  }

  struct StageRun {
    int ranks;
    std::string name, extra;
  };
  static inline const std::vector<StageRun> kStageRuns = {
      {1, "one", "--steps 5"},
      {2, "zero0", "--steps 5 --zero 0"},
      {2, "zero1", "--steps 5 --zero 1"},
      {2, "zero2", "--steps 5 --zero 2"},
      {2, "zero3", "--steps 5 --zero 3"},
      {2, "blocks", "--steps 5 --zero 3 --activation-checkpointing blocks"},
      {2, "every2", "--steps 5 --zero 2 --activation-checkpointing every:2"},
      {2, "selective", "--steps 5 --zero 3 --activation-checkpointing selective"},
      {2, "offload", "--steps 5 --zero 3 --offload-optimizer cpu --offload-params cpu"},
  };
  static inline std::unique_ptr<testing::TrainGptSuiteFiles> files_;
  static inline std::unique_ptr<testing::QueuedRuns> runs_;
  static inline ProcessResult prepared_;
};

TEST_F(TrainLlama, ZeroStagesAndCheckpointingMatchOneProcessBitForBit) {
  const std::vector<std::string> one = losses("one");
  ASSERT_EQ(one.size(), 5u);
  for (const StageRun& run : kStageRuns) {
    if (run.name != "one") {
      EXPECT_EQ(losses(run.name), one) << run.name << " (" << run.extra << ") at 2 ranks";
    }
  }
}

TEST_F(TrainLlama, ResumesOnAnotherRankCountAndStageBitForBit) {
  const std::vector<std::string> straight = losses("straight");
  ASSERT_EQ(straight.size(), 8u);
  const std::vector<ProcessResult>& runs = runs_->results("first, resumed");
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].output;
  ASSERT_EQ(losses_of(files_->metrics_path("first")), std::vector<std::string>(straight.begin(), straight.begin() + 4));
  const ProcessResult& resumed = runs.at(1);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step 4"), std::string::npos) << resumed.output;
  const std::vector<std::string> after = losses_of(files_->metrics_path("resumed"));
  ASSERT_GE(after.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(after.end() - 4, after.end()),
            std::vector<std::string>(straight.begin() + 4, straight.end()));
}

TEST_F(TrainLlama, LossFallsOnTheDefaultCorpusAsTheGptsDoes) {
  ASSERT_EQ(prepared_.exit_code, 0) << prepared_.output;
  // Each run: (first loss, mean of the last 10 steps' losses).
  const auto final_loss = [&](const std::string& name) {
    const ProcessResult& r = runs_->result(name);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const std::vector<std::string> losses = losses_of(files_->metrics_path(name));
    EXPECT_EQ(losses.size(), 60u) << r.output;
    double tail = 0;  // the mean of the last 10 steps' losses
    for (std::size_t k = losses.size() >= 10 ? losses.size() - 10 : 0; k < losses.size(); ++k)
      tail += std::stod(losses[k]) / 10;
    return std::pair{losses.empty() ? 0.0 : std::stod(losses.front()), tail};
  };
  const auto [gpt_first, gpt_last] = final_loss("gpt");
  const auto [llama_first, llama_last] = final_loss("llama");
  const auto [eight_bit_first, eight_bit_last] = final_loss("llama8bit");
  // Both start at ln(V) (a byte corpus: 257 tokens padded to 320) and fall well below it within 60 steps.
  EXPECT_NEAR(llama_first, std::log(320.0), 0.2);
  EXPECT_LT(llama_last, llama_first - 2.0) << "Llama: " << llama_first << " -> " << llama_last;
  EXPECT_LT(gpt_last, gpt_first - 2.0) << "GPT: " << gpt_first << " -> " << gpt_last;
  EXPECT_LT(llama_last, gpt_last + 0.3) << "Llama " << llama_last << " vs GPT " << gpt_last;
  EXPECT_LT(eight_bit_last, llama_last + 0.3)
      << "Llama with 8-bit AdamW " << eight_bit_last << " vs AdamW " << llama_last;
}

// Llama 3-sized vocabularies need ids beyond uint16: their token files are llm.c's version 2
// (uint32 tokens), which train_gpt reads as it reads version 1.
TEST_F(TrainLlama, TrainsOnUint32TokenFiles) {
  const ProcessResult& r = runs_->result("wide");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> losses = losses_of(files_->metrics_path("wide"));
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_NEAR(std::stod(losses[0]), std::log(70016.0), 0.1) << "uniform over the 70016 ids at step 1";
}

TEST_F(TrainLlama, RefusesFlagsThatDoNotFitTheModel) {
  const ProcessResult& gqa = runs_->result("kv-heads 3");
  EXPECT_NE(gqa.exit_code, 0);
  EXPECT_NE(gqa.output.find("--kv-heads 3: does not divide the 4 query heads"), std::string::npos) << gqa.output;
  const ProcessResult& gpt = runs_->result("gpt kv-heads");
  EXPECT_NE(gpt.exit_code, 0);
  EXPECT_NE(gpt.output.find("--kv-heads applies to --model llama"), std::string::npos) << gpt.output;
}

}  // namespace
}  // namespace tessera
