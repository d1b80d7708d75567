// train_gpt --tp end to end on the CPU: tensor parallelism (2 ranks per group) times 2 data-parallel
// ranks logs the losses of the same global batch on 2 data-parallel ranks without it (within 1e-5;
// the group's sums add the pieces in another order), for the GPT and for Llama, with sequence
// parallelism on and off; activation checkpointing and optimizer offload change no bit of a
// tensor-parallel run; bf16 compute and 8-bit AdamW stay within their own precision of the
// unsplit run; and what cannot be run is refused by name before anything trains.
// A tensor-parallel run's checkpoint resumes at the same layout bit for bit and without tensor
// parallelism within 1e-5; tessera_ckpt verifies, describes and exports it, and the export starts
// a run with and without tensor parallelism at the same weights (--init-from); the sample drawn at
// the end (each rank holding a piece of the vocabulary's logits) is the unsplit model's text.
// tessera-test-timeout: 300
// tessera-test-cost: 14
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::ProcessResult;

class TrainTensorParallel : public testing::TrainGptTest {
 protected:
  TrainTensorParallel() : TrainGptTest("train_tp", 40000, 60) {}

  std::string flags(const std::string& model = "gpt2") const {
    const std::string llama = model == "llama" ? " --model llama --kv-heads 2 --ffn-dim 64" : "";
    return " --data " + data_ + llama +
           " --layers 2 --dim 32 --heads 4 --seq-len 16 --vocab 63 --micro-batch 2 --steps 8 --zero 1"
           " --sample-tokens 0 --eval-every 0 --log-every 1 --threads 1 --progress plain";
  }

  // EXPECTs the logged losses of `actual` within `rel` of `expected`'s, step by step.
  static void expect_close(const std::vector<std::string>& actual, const std::vector<std::string>& expected, double rel,
                           const std::string& what) {
    ASSERT_EQ(actual.size(), expected.size()) << what;
    for (std::size_t s = 0; s < expected.size(); ++s) {
      const double a = std::stod(actual[s]), e = std::stod(expected[s]);
      EXPECT_NEAR(a, e, rel * std::abs(e)) << what << ": loss at step " << s + 1;
    }
  }
};

// The text after "sample" at the end of a run's output ("" when there is none).
std::string sample_of(const std::string& output) {
  const std::size_t at = output.find("\nsample");
  return at == std::string::npos ? "" : output.substr(at, output.find("\n---", at + 10) - at);
}

TEST_F(TrainTensorParallel, SamplesTheTextOfTheUnsplitModel) {
  const std::string sampling = testing::set_flag(flags(), "--sample-tokens", "24") + " --temperature 0.01";
  const ProcessResult tp = launch(4, "sample_tp", sampling + " --tp 2");
  const ProcessResult dp = launch(2, "sample_dp", sampling);
  ASSERT_EQ(tp.exit_code, 0) << tp.output;
  ASSERT_EQ(dp.exit_code, 0) << dp.output;
  EXPECT_NE(sample_of(dp.output), "") << dp.output;
  EXPECT_EQ(sample_of(tp.output), sample_of(dp.output));
}

TEST_F(TrainTensorParallel, MatchesTheDataParallelRunOfTheSameBatch) {
  for (const std::string model : {"gpt2", "llama"}) {
    const std::vector<std::string> dp = run_losses(2, model + "_dp", flags(model));
    ASSERT_EQ(dp.size(), 8u);
    const std::vector<std::string> tp = run_losses(4, model + "_tp", flags(model) + " --tp 2");
    expect_close(tp, dp, 1e-5, model + ": tp 2 x dp 2 against dp 2");
    const std::vector<std::string> tp_zero3 =
        run_losses(4, model + "_tp3", testing::set_flag(flags(model), "--zero", "3") + " --tp 2");
    EXPECT_EQ(tp_zero3, tp) << model << ": ZeRO-3 under tensor parallelism";
    // Hybrid sharding over the data-parallel ranks (groups of 1: each replicates the whole pieces).
    expect_close(
        run_losses(4, model + "_hybrid", testing::set_flag(flags(model), "--zero", "3") + " --tp 2 --hybrid-group 1"),
        tp, 1e-5, model + ": hybrid groups under tensor parallelism");
    expect_close(run_losses(4, model + "_nosp", flags(model) + " --tp 2 --sequence-parallel off"), tp, 1e-5,
                 model + ": sequence parallelism off against on");
  }
}

TEST_F(TrainTensorParallel, CheckpointingOffloadBf16And8BitAdamW) {
  const std::vector<std::string> tp = run_losses(4, "plain", flags() + " --tp 2");
  EXPECT_EQ(run_losses(4, "blocks", flags() + " --tp 2 --activation-checkpointing blocks"), tp);
  EXPECT_EQ(run_losses(4, "selective", flags() + " --tp 2 --activation-checkpointing selective"), tp);
  EXPECT_EQ(run_losses(4, "offload", testing::set_flag(flags(), "--zero", "3") + " --tp 2 --offload-optimizer cpu"),
            run_losses(4, "zero3", testing::set_flag(flags(), "--zero", "3") + " --tp 2"));
  // bf16 compute and 8-bit moments round differently in pieces than whole; they stay within their
  // own precision of the unsplit run.
  expect_close(run_losses(4, "bf16", flags() + " --tp 2 --compute-dtype bf16"),
               run_losses(2, "bf16_dp", flags() + " --compute-dtype bf16"), 2e-2, "bf16 compute");
  expect_close(run_losses(4, "8bit", flags() + " --tp 2 --optimizer adamw8bit --optimizer-block 256"),
               run_losses(2, "8bit_dp", flags() + " --optimizer adamw8bit --optimizer-block 256"), 2e-2, "8-bit AdamW");
}

TEST_F(TrainTensorParallel, CheckpointsResumeAtAnyTensorParallelSize) {
  const std::string ckpt = (dir_ / "ckpt").string();
  const std::vector<std::string> straight =
      run_losses(4, "straight", flags() + " --tp 2 --checkpoint-dir " + ckpt + " --save-every 4");
  ASSERT_EQ(straight.size(), 8u);
  const std::string from_step_4 = ckpt + "/step_0000004";
  const std::vector<std::string> same = run_losses(4, "same", flags() + " --tp 2 --resume " + from_step_4);
  ASSERT_EQ(same.size(), 4u);
  EXPECT_EQ(same, std::vector<std::string>(straight.begin() + 4, straight.end())) << "tp 2 resumed at tp 2";
  const std::vector<std::string> unsplit = run_losses(2, "unsplit", flags() + " --resume " + from_step_4);
  expect_close(unsplit, std::vector<std::string>(straight.begin() + 4, straight.end()), 1e-5,
               "tp 2 resumed without tensor parallelism");
  const std::string tool = std::string(std::getenv("TESSERA_BIN_DIR")) + "/tessera_ckpt";
  const ProcessResult verify = testing::run_bounded(tool + " verify " + from_step_4, 60);
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
  const ProcessResult info = testing::run_bounded(tool + " info " + from_step_4, 60);
  EXPECT_NE(info.output.find("tensor parallel 2"), std::string::npos) << info.output;
  const ProcessResult exported =
      testing::run_bounded(tool + " export " + from_step_4 + " " + (dir_ / "model.h5").string(), 60);
  EXPECT_EQ(exported.exit_code, 0) << exported.output;
  // The export starts a tensor-parallel run and an unsplit one at the same weights.
  const std::string init = testing::set_flag(flags(), "--steps", "2") + " --init-from " + (dir_ / "model.h5").string();
  expect_close(run_losses(4, "init_tp", init + " --tp 2"), run_losses(2, "init_dp", init), 1e-5,
               "--init-from with and without tensor parallelism");
}

TEST_F(TrainTensorParallel, RefusesWhatItCannotRunByName) {
  const ProcessResult odd = launch(4, "odd", flags() + " --tp 3");
  EXPECT_NE(odd.exit_code, 0);
  EXPECT_NE(odd.output.find("--tp 3"), std::string::npos) << odd.output;
  EXPECT_NE(odd.output.find("4 ranks"), std::string::npos) << odd.output;
  const ProcessResult heads = launch(2, "heads", testing::set_flag(flags(), "--heads", "1") + " --tp 2");
  EXPECT_NE(heads.exit_code, 0);
  EXPECT_NE(heads.output.find("attention heads"), std::string::npos) << heads.output;
  const ProcessResult sp = launch(2, "sp", flags() + " --tp 2 --sequence-parallel maybe");
  EXPECT_NE(sp.exit_code, 0);
  EXPECT_NE(sp.output.find("--sequence-parallel maybe"), std::string::npos) << sp.output;
}

}  // namespace
}  // namespace tessera
