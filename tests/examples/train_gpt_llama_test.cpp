// train_gpt --model llama end to end, as the GPT is held to: ZeRO 0-3, activation checkpointing and
// CPU offload give the same losses bit for bit as one process; a checkpoint saved by 2 ranks at ZeRO-3 resumes
// on 1 rank at ZeRO-1 and continues with the losses of the uninterrupted run; on the default corpus,
// with 2 ranks, its loss falls as the GPT's does, with AdamW and 8-bit AdamW; mismatched flags are refused.
// tessera-test-timeout: 240
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::losses_of;
using testing::ProcessResult;
using testing::run_bounded;

constexpr const char* kMpirun = "mpirun --oversubscribe -np ";

class TrainLlama : public testing::TrainGptTest {
 protected:
  TrainLlama() : TrainGptTest("train_llama", 40000, 60) {}

  // A tiny Llama with grouped-query attention (4 heads, 2 key/value heads) over the test's tokens.
  std::string llama_flags() const {
    return " --data " + data_ +
           " --model llama --layers 2 --dim 32 --heads 4 --kv-heads 2 --ffn-dim 48 --seq-len 16 --vocab 64"
           " --global-batch 4 --micro-batch 2 --sample-tokens 0 --eval-every 0 --log-every 1 --threads 1"
           " --no-memory-check";
  }

  // A run of the tiny Llama with `extra` flags, for launch_concurrently and run_losses_concurrently.
  Launch llama(int ranks, const std::string& name, const std::string& extra) const {
    return {ranks, name, llama_flags() + " " + extra};
  }
};

TEST_F(TrainLlama, ZeroStagesAndCheckpointingMatchOneProcessBitForBit) {
  // Independent runs, each with its own metrics file: they run at once.
  const std::vector<std::vector<std::string>> losses = run_losses_concurrently({
      llama(1, "one", "--steps 5"),
      llama(2, "zero0", "--steps 5 --zero 0"),
      llama(2, "zero1", "--steps 5 --zero 1"),
      llama(2, "zero2", "--steps 5 --zero 2"),
      llama(2, "zero3", "--steps 5 --zero 3"),
      llama(2, "blocks", "--steps 5 --zero 3 --activation-checkpointing blocks"),
      llama(2, "every2", "--steps 5 --zero 2 --activation-checkpointing every:2"),
      llama(2, "selective", "--steps 5 --zero 3 --activation-checkpointing selective"),
      llama(2, "offload", "--steps 5 --zero 3 --offload-optimizer cpu --offload-params cpu"),
  });
  const std::vector<std::string>& one = losses[0];
  ASSERT_EQ(one.size(), 5u);
  for (int zero = 0; zero <= 3; ++zero) EXPECT_EQ(losses[1 + zero], one) << "ZeRO-" << zero << " at 2 ranks";
  EXPECT_EQ(losses[5], one) << "blocks";
  EXPECT_EQ(losses[6], one) << "every:2";
  EXPECT_EQ(losses[7], one) << "selective";
  EXPECT_EQ(losses[8], one) << "offload";
}

TEST_F(TrainLlama, ResumesOnAnotherRankCountAndStageBitForBit) {
  // The uninterrupted run and the first part (saved at step 4) at once; then the resumed part.
  const std::string ckpt = (dir_ / "ckpt").string();
  const std::vector<std::vector<std::string>> losses = run_losses_concurrently(
      {llama(2, "straight", "--steps 8 --zero 3"),
       llama(2, "first", "--steps 4 --zero 3 --save-every 4 --checkpoint-dir " + ckpt)});
  const std::vector<std::string>& straight = losses[0];
  ASSERT_EQ(straight.size(), 8u);
  ASSERT_EQ(losses[1], std::vector<std::string>(straight.begin(), straight.begin() + 4));
  const std::string metrics = (dir_ / "resumed.jsonl").string();
  const ProcessResult resumed =
      run_bounded(std::string(kMpirun) + "1 " + train_gpt_ + llama_flags() + " --steps 8 --zero 1 --checkpoint-dir " +
                      ckpt + " --resume auto --metrics " + metrics,
                  120);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step 4"), std::string::npos) << resumed.output;
  const std::vector<std::string> after = losses_of(metrics);
  ASSERT_GE(after.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(after.end() - 4, after.end()),
            std::vector<std::string>(straight.begin() + 4, straight.end()));
}

TEST_F(TrainLlama, LossFallsOnTheDefaultCorpusAsTheGptsDoes) {
  // The default corpus as a first run makes it: tessera_prepare over the system's license texts.
  const std::string corpus = (dir_ / "corpus.bin").string();
  const std::string bin_dir = std::filesystem::path(train_gpt_).parent_path().string();
  const ProcessResult prepared = run_bounded(bin_dir + "/tessera_prepare --out " + corpus, 120);
  ASSERT_EQ(prepared.exit_code, 0) << prepared.output;
  // The three runs (GPT, Llama, Llama with 8-bit AdamW) at once; each: (first loss, mean of the last
  // 10 steps' losses).
  const auto run = [&](const std::string& model, const std::string& name, const std::string& extra = "") {
    return Launch{2, name,
                  " --data " + corpus + " --model " + model +
                      " --layers 2 --dim 64 --heads 4 --seq-len 64 --steps 60 --global-batch 8"
                      " --micro-batch 4 --warmup 10 --sample-tokens 0 --eval-every 0 --log-every 1 --threads 1" +
                      extra};
  };
  const std::vector<Launch> runs = {run("gpt2", "gpt"), run("llama", "llama"),
                                    run("llama", "llama8bit", " --zero 2 --optimizer adamw8bit")};
  const std::vector<ProcessResult> results = launch_concurrently(runs, 150);
  const auto final_loss = [&](std::size_t i) {
    EXPECT_EQ(results[i].exit_code, 0) << results[i].output;
    const std::vector<std::string> losses = losses_of(metrics_path(runs[i].name));
    EXPECT_EQ(losses.size(), 60u) << results[i].output;
    double tail = 0;  // the mean of the last 10 steps' losses
    for (std::size_t k = losses.size() >= 10 ? losses.size() - 10 : 0; k < losses.size(); ++k)
      tail += std::stod(losses[k]) / 10;
    return std::pair{losses.empty() ? 0.0 : std::stod(losses.front()), tail};
  };
  const auto [gpt_first, gpt_last] = final_loss(0);
  const auto [llama_first, llama_last] = final_loss(1);
  const auto [eight_bit_first, eight_bit_last] = final_loss(2);
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
  const std::string wide = (dir_ / "wide.bin").string();
  write_token_file(wide, testing::random_tokens(20000, 70000));
  const std::string metrics = (dir_ / "wide.jsonl").string();
  const ProcessResult r =
      run_bounded(train_gpt_ + testing::set_flag(testing::set_flag(llama_flags(), "--data", wide), "--vocab", "70016") +
                      " --steps 2 --metrics " + metrics,
                  120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> losses = losses_of(metrics);
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_NEAR(std::stod(losses[0]), std::log(70016.0), 0.1) << "uniform over the 70016 ids at step 1";
}

TEST_F(TrainLlama, RefusesFlagsThatDoNotFitTheModel) {
  const std::vector<ProcessResult> refused = testing::run_concurrently(
      {train_gpt_ + testing::set_flag(llama_flags(), "--kv-heads", "3") + " --steps 1",
       train_gpt_ + " --data " + data_ + " --steps 1 --kv-heads 2"},
      60);
  const ProcessResult& gqa = refused[0];
  EXPECT_NE(gqa.exit_code, 0);
  EXPECT_NE(gqa.output.find("--kv-heads 3: does not divide the 4 query heads"), std::string::npos) << gqa.output;
  const ProcessResult& gpt = refused[1];
  EXPECT_NE(gpt.exit_code, 0);
  EXPECT_NE(gpt.output.find("--kv-heads applies to --model llama"), std::string::npos) << gpt.output;
}

}  // namespace
}  // namespace tessera
