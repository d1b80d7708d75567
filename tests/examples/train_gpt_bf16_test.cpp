// train_gpt --compute-dtype bf16 end to end on the CPU:
//  * ZeRO 0-3, activation checkpointing and CPU offload at 2 ranks log the losses of one process,
//    bit for bit, as f32 does; a checkpoint saved in bf16 resumes and continues the uninterrupted run,
//    and resumed in f32 compute continues the same training;
//  * the simulated GPU (--device sim-gpu) trains bit-identically to the CPU device;
//  * on the default corpus the loss curve stays within 2% of the f32 run's at every logged step after
//    step 50 and the final validation loss within 1%, for the GPT and for Llama;
//  * the start-up line says which compute dtype runs and why; --compute-dtype f16 is refused by name.
// tessera-test-timeout: 300
// tessera-test-cost: 20
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::losses_of;
using testing::ProcessResult;
using testing::run_bounded;

class TrainBf16 : public testing::TrainGptTest {
 protected:
  TrainBf16() : TrainGptTest("train_bf16", 40000, 60) {}

  std::string flags(const std::string& model = "gpt2") const {
    const std::string llama = model == "llama" ? " --model llama --kv-heads 2 --ffn-dim 48" : "";
    return " --data " + data_ + llama +
           " --layers 2 --dim 32 --heads 4 --seq-len 16 --vocab 64 --global-batch 4 --micro-batch 2"
           " --sample-tokens 0 --eval-every 0 --log-every 1 --threads 1 --no-memory-check --compute-dtype bf16";
  }
};

TEST_F(TrainBf16, ZeroStagesCheckpointingAndOffloadMatchOneProcessBitForBit) {
  const std::vector<std::string> one = run_losses(1, "one", flags() + " --steps 5");
  ASSERT_EQ(one.size(), 5u);
  const std::vector<std::string> f32 =
      run_losses(1, "f32", testing::set_flag(flags(), "--compute-dtype", "f32") + " --steps 5");
  EXPECT_NE(one, f32) << "bf16 compute logged the f32 losses: is it running in f32?";
  for (int zero = 0; zero <= 3; ++zero) {
    EXPECT_EQ(run_losses(2, "zero" + std::to_string(zero), flags() + " --steps 5 --zero " + std::to_string(zero)), one)
        << "ZeRO-" << zero << " at 2 ranks";
  }
  EXPECT_EQ(run_losses(2, "blocks", flags() + " --steps 5 --zero 3 --activation-checkpointing blocks"), one);
  EXPECT_EQ(run_losses(2, "selective", flags() + " --steps 5 --zero 2 --activation-checkpointing selective"), one);
  EXPECT_EQ(run_losses(2, "offload", flags() + " --steps 5 --zero 3 --offload-optimizer cpu --offload-params cpu"), one);
  EXPECT_EQ(run_losses(2, "wire", flags() + " --steps 5 --zero 2 --param-dtype f32"), one)
      << "f32 stored parameters give the same bf16 compute copies";
  EXPECT_EQ(run_losses(1, "llama", flags("llama") + " --steps 5").size(), 5u);
}

TEST_F(TrainBf16, ResumesBitForBit) {
  const std::vector<std::string> straight = run_losses(2, "straight", flags() + " --steps 8 --zero 3");
  ASSERT_EQ(straight.size(), 8u);
  const std::string ckpt = (dir_ / "ckpt").string();
  const std::vector<std::string> first =
      run_losses(2, "first", flags() + " --steps 4 --zero 3 --save-every 4 --checkpoint-dir " + ckpt);
  ASSERT_EQ(first, std::vector<std::string>(straight.begin(), straight.begin() + 4));
  // The same checkpoint resumed in f32 compute, where the norms' parameters share their block's unit
  // (saved in units of their own): read by name, it continues the same training, not the same bits.
  const std::string f32_ckpt = (dir_ / "ckpt_f32").string();
  std::filesystem::copy(ckpt, f32_ckpt,
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  const ProcessResult in_f32 = launch(1, "in_f32", testing::set_flag(flags(), "--compute-dtype", "f32") +
                                                       " --steps 8 --checkpoint-dir " + f32_ckpt + " --resume auto");
  ASSERT_EQ(in_f32.exit_code, 0) << in_f32.output;
  const std::vector<std::string> f32_after = losses_of(metrics_path("in_f32"));
  ASSERT_GE(f32_after.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    const double bf16_loss = std::stod(straight[4 + i]), f32_loss = std::stod(f32_after[f32_after.size() - 4 + i]);
    EXPECT_NEAR(f32_loss, bf16_loss, 2e-2 * bf16_loss) << "step " << 5 + i << " resumed in f32";
  }
  const ProcessResult resumed = launch(1, "resumed", flags() + " --steps 8 --zero 1 --checkpoint-dir " + ckpt +
                                                         " --resume auto");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const std::vector<std::string> after = losses_of(metrics_path("resumed"));
  ASSERT_GE(after.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(after.end() - 4, after.end()),
            std::vector<std::string>(straight.begin() + 4, straight.end()));
  const std::string bin_dir = std::filesystem::path(train_gpt_).parent_path().string();
  const ProcessResult info = run_bounded(bin_dir + "/tessera_ckpt info " + ckpt, 60);
  EXPECT_NE(info.output.find("compute bf16"), std::string::npos) << "the checkpoint records it:\n" << info.output;
}

TEST_F(TrainBf16, SimulatedGpuTrainsBitIdenticallyToTheCpu) {
  const std::vector<std::string> cpu = run_losses(1, "cpu", flags() + " --steps 4 --zero 2");
  ASSERT_EQ(cpu.size(), 4u);
  EXPECT_EQ(run_losses(1, "sim", flags() + " --steps 4 --zero 2 --device sim-gpu"), cpu);
  EXPECT_EQ(run_losses(2, "sim2", flags() + " --steps 4 --zero 3 --device sim-gpu"), cpu);
}

TEST_F(TrainBf16, StartUpLineAndRefusals) {
  const ProcessResult automatic = run_bounded(train_gpt_ + testing::set_flag(flags(), "--compute-dtype", "auto") +
                                                  " --steps 1 --device cpu",
                                              60);
  ASSERT_EQ(automatic.exit_code, 0) << automatic.output;
  EXPECT_NE(automatic.output.find("compute: f32 (--compute-dtype auto: f32 off a GPU); params stored f32"),
            std::string::npos)
      << automatic.output;
  const ProcessResult bf16 = run_bounded(train_gpt_ + flags() + " --steps 1", 60);
  EXPECT_NE(bf16.output.find("compute: bf16 (--compute-dtype bf16); params stored bf16 (norms f32), f32 master"), std::string::npos)
      << bf16.output;
  const ProcessResult f16 = run_bounded(train_gpt_ + testing::set_flag(flags(), "--compute-dtype", "f16") + " --steps 1", 60);
  EXPECT_NE(f16.exit_code, 0);
  EXPECT_NE(f16.output.find("--compute-dtype f16: must be f32 or bf16"), std::string::npos) << f16.output;
}

// The (step, loss) of every train record of a metrics file, and the val_loss of its last validation.
struct Curve {
  std::vector<std::pair<std::int64_t, double>> train;
  double final_val = NAN;
};

Curve curve_of(const std::string& metrics) {
  std::ifstream in(metrics);
  Curve c;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json r = nlohmann::json::parse(line);
    if (r.value("kind", "") == "train") c.train.emplace_back(r.at("step").get<std::int64_t>(), r.at("loss").get<double>());
    if (r.value("kind", "") == "val") c.final_val = r.at("val_loss").get<double>();
  }
  return c;
}

// On the default corpus (what scripts/train trains on), bf16 follows the f32 curve.
TEST_F(TrainBf16, FollowsTheF32LossCurveOnTheDefaultCorpus) {
  const std::string corpus = (dir_ / "corpus.bin").string();
  const std::string bin_dir = std::filesystem::path(train_gpt_).parent_path().string();
  const ProcessResult prepared = run_bounded(bin_dir + "/tessera_prepare --out " + corpus, 120);
  ASSERT_EQ(prepared.exit_code, 0) << prepared.output;
  for (const char* model : {"gpt2", "llama"}) {
    auto train = [&](const std::string& dtype) {  // the run's name
      const std::string name = std::string(model) + "_" + dtype;
      const ProcessResult r =
          launch(1, name,
                 " --data " + corpus + " --model " + model +
                     " --layers 2 --dim 64 --heads 4 --seq-len 64 --steps 150 --global-batch 8 --micro-batch 8"
                     " --warmup 10 --sample-tokens 0 --eval-every 150 --eval-batches 2 --log-every 10 --threads 2"
                     " --compute-dtype " + dtype,
                 240);
      EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.output;
      return name;
    };
    const Curve a = curve_of(metrics_path(train("f32"))), b = curve_of(metrics_path(train("bf16")));
    ASSERT_EQ(a.train.size(), b.train.size()) << model;
    ASSERT_GE(a.train.size(), 15u) << model;
    int compared = 0;
    for (std::size_t i = 0; i < a.train.size(); ++i) {
      ASSERT_EQ(a.train[i].first, b.train[i].first) << model << ": the runs logged other steps";
      if (a.train[i].first <= 50) continue;
      const double x = a.train[i].second, y = b.train[i].second;
      EXPECT_LE(std::fabs(y - x), 0.02 * x) << model << ": loss at step " << a.train[i].first << ": f32 " << x
                                            << ", bf16 " << y;
      ++compared;
    }
    EXPECT_GE(compared, 10) << model;
    ASSERT_TRUE(std::isfinite(a.final_val) && std::isfinite(b.final_val)) << model << ": no validation record";
    EXPECT_LE(std::fabs(b.final_val - a.final_val), 0.01 * a.final_val)
        << model << ": final validation loss f32 " << a.final_val << ", bf16 " << b.final_val;
    EXPECT_LT(b.train.back().second, b.train.front().second - 1.0) << model << ": the bf16 loss did not fall";
  }
}

}  // namespace
}  // namespace tessera
