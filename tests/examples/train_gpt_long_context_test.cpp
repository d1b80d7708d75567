// train_gpt at T = 1024 on 2 ranks, ZeRO-3 with every block checkpointed, on the default corpus
// (tessera_prepare's, from this machine's licence texts, made in the test's directory): the losses and validation loss
// of its first 8 steps equal, to the precision the log prints (4 decimals), those the T x T attention kernel gave
// before the tiled one replaced it (recorded below from that kernel, same command), so the change of attention
// algorithm left training where it was; and the metrics record peak activations below what the (B, NH, T, T)
// probabilities alone would take on one layer (8 x 4 x 1024 x 1024 f32 = 134 MB).
// tessera-test-cost: 15
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::run_bounded;
using testing::ScratchDir;
using testing::train_gpt_binary;

struct Record {
  const char* kind;
  int step;
  double loss;
};

// From the T x T kernel: val at step 0, then train steps 1-8.
constexpr Record kBefore[] = {{"val", 0, 5.665765},    {"train", 1, 5.742222},  {"train", 2, 5.6818132},
                              {"train", 3, 5.5954475}, {"train", 4, 5.4578094}, {"train", 5, 5.3141966},
                              {"train", 6, 5.194211},  {"train", 7, 5.0994253}, {"train", 8, 5.048024}};

TEST(TrainGptLongContext, TwoRankZero3BlocksMatchesTheTxTKernelToThePrintedPrecision) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  ScratchDir dir("long_context");
  const std::string corpus = (dir / "corpus.bin").string();
  const std::string prepare = train_gpt.substr(0, train_gpt.rfind('/') + 1) + "tessera_prepare";
  const auto prepared = run_bounded(prepare + " --out " + corpus, 60);
  ASSERT_EQ(prepared.exit_code, 0) << prepared.output;
  // The recorded losses are those of the licence texts of Debian 12's base-files.
  if (prepared.output.find(": 213600 tokens (training)") == std::string::npos) {
    GTEST_SKIP() << "this machine's default corpus is not the one the losses were recorded on: " << prepared.output;
  }
  const std::string metrics = (dir / "metrics.jsonl").string();
  const auto run = run_bounded("mpirun --oversubscribe -np 2 " + train_gpt + " --data " + corpus +
                                   " --seq-len 1024 --zero 3 --activation-checkpointing blocks"
                                   " --layers 2 --dim 128 --heads 4 --steps 8 --log-every 1 --eval-every 0"
                                   " --sample-tokens 0 --threads 1 --metrics " +
                                   metrics,
                               240);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream in(metrics);
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json record = nlohmann::json::parse(line);
    if (record.at("kind") != "config") records.push_back(std::move(record));  // the run's settings
  }
  ASSERT_EQ(records.size(), std::size(kBefore)) << run.output;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    const Record& want = kBefore[i];
    ASSERT_EQ(r.at("kind"), want.kind) << r.dump();
    ASSERT_EQ(r.at("step"), want.step) << r.dump();
    const double loss = r.at(want.kind == std::string("val") ? "val_loss" : "loss").get<double>();
    // Printed with 4 decimals: equal when both round alike; a value that sits on a rounding
    // boundary may print one unit apart, so the bound is half a unit of the last printed digit.
    EXPECT_LE(std::fabs(loss - want.loss), 5e-5)
        << want.kind << " step " << want.step << ": " << loss << " now, " << want.loss << " with the T x T kernel";
    if (want.step > 0) {
      EXPECT_LT(r.at("memory").at("activations").at("peak").get<double>(), 134.2e6) << r.dump();
    }
  }
}

}  // namespace
}  // namespace tessera
