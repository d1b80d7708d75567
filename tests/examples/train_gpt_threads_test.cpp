// train_gpt gives the same run at --threads 1, 2 and 3: the same logged losses and gradient norms,
// and final weights whose safetensors exports hold the same tensor bytes. The model (C 48, T 111,
// micro-batch 3, vocab 331) makes GEMMs whose inner dimensions (333 rows, 331 logits) span more
// than one of OpenBLAS's blocks, where OpenBLAS's own threads would round differently. The three runs
// are independent and run at once.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::run_bounded;
using testing::set_flag;
using testing::tiny_run;

constexpr int kSteps = 6;
constexpr int kVocab = 331;

// "loss L  lr R  gnorm G" of every logged step, in order.
std::vector<std::string> step_values(const std::string& log) {
  static const std::regex kStep(R"(step +\d+/\d+  (loss \S+  lr \S+  gnorm \S+)  )");
  std::vector<std::string> values;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), kStep); it != std::sregex_iterator(); ++it) {
    values.push_back((*it)[1]);
  }
  return values;
}

// The tensor bytes of a safetensors file: what follows its header (8-byte little-endian length, then
// JSON whose metadata names the checkpoint it came from).
std::string safetensors_tensor_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (file.size() < 8) return "";
  std::uint64_t header = 0;
  std::memcpy(&header, file.data(), sizeof header);
  return header > file.size() - 8 ? "" : file.substr(8 + header);
}

class TrainGptThreads : public testing::TrainGptTest {
 protected:
  TrainGptThreads() : TrainGptTest("train_gpt_threads", 20000, kVocab) {}
  void SetUp() override {
    TrainGptTest::SetUp();
    if (IsSkipped()) return;
    tessera_ckpt_ = std::string(std::getenv("TESSERA_BIN_DIR")) + "/tessera_ckpt";
  }

  struct Run {
    std::vector<std::string> steps;  // the logged values of each step
    std::string weights;             // the tensor bytes of the final weights' safetensors export
  };

  // Trains kSteps at `threads` threads, saving at the end, and exports the weights.
  Run train(int threads) const {
    const std::string run_dir = (dir_ / ("run_" + std::to_string(threads))).string();
    std::string flags = set_flag(tiny_run(data_, kVocab), "--dim", "48");
    flags = set_flag(flags, "--heads", "3");
    flags = set_flag(flags, "--seq-len", "111");
    flags = set_flag(flags, "--threads", std::to_string(threads));
    const auto trained = run_bounded(train_gpt_ + flags + " --micro-batch 3 --steps " + std::to_string(kSteps) +
                                         " --checkpoint-dir " + run_dir + " --save-every " + std::to_string(kSteps),
                                     120);
    EXPECT_EQ(trained.exit_code, 0) << trained.output;
    // Each export in its own directory: a safetensors export writes config.json beside it.
    const std::filesystem::path export_dir = dir_ / ("export_" + std::to_string(threads));
    std::filesystem::create_directories(export_dir);
    const std::string weights = (export_dir / "model.safetensors").string();
    const auto exported = run_bounded(tessera_ckpt_ + " export " + run_dir + " " + weights +
                                          " --format safetensors --vocab " + std::to_string(kVocab),
                                      120);
    EXPECT_EQ(exported.exit_code, 0) << exported.output;
    return {step_values(trained.output), safetensors_tensor_bytes(weights)};
  }

  std::string tessera_ckpt_;
};

TEST_F(TrainGptThreads, OneTwoAndThreeThreadsGiveTheSameRun) {
  // The three runs (each into its own directory and export) at once.
  std::future<Run> two = std::async(std::launch::async, [this] { return train(2); });
  std::future<Run> three = std::async(std::launch::async, [this] { return train(3); });
  const Run one = train(1);
  std::map<int, Run> others;
  others[2] = two.get();
  others[3] = three.get();
  ASSERT_EQ(one.steps.size(), static_cast<std::size_t>(kSteps));
  ASSERT_FALSE(one.weights.empty());
  for (int threads : {2, 3}) {
    const Run& other = others[threads];
    EXPECT_EQ(other.steps, one.steps) << "the logged steps at " << threads << " threads";
    EXPECT_EQ(other.weights.size(), one.weights.size());
    EXPECT_TRUE(other.weights == one.weights)
        << "the final weights at " << threads << " threads differ from 1 thread's";
  }
}

}  // namespace
}  // namespace tessera
