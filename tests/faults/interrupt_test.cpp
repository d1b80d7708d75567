// Ctrl-C (SIGINT) to a lone train_gpt: the first one saves at the next step boundary, draws the
// metrics plots and stops cleanly (exit 0), as SIGUSR1 does; a second one stops at once, without
// saving (the process ends by SIGINT). The jobs run with job control on (`set -m`), as from a
// terminal: a background job of a script without it starts with SIGINT ignored, and keeps it so.
// tessera-test-timeout: 300
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::run_bounded;
using testing::ScratchDir;
using testing::set_flag;
using testing::tiny_run;
using testing::train_gpt_binary;

class Interrupt : public ::testing::Test {
 protected:
  void SetUp() override {
    train_gpt_ = train_gpt_binary();
    if (train_gpt_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    data_ = (dir_ / "tokens.bin").string();
    write_token_file(data_, random_tokens(20000, 40));
  }

  // Starts `train_gpt <flags>` in the background, waits for `wait_for` in its log, then sends it
  // SIGINT once per entry of `gaps` after sleeping that long ("0.3"), and waits for it. Returns the
  // log followed by "job exit N" (130: ended by SIGINT).
  std::string interrupted(const std::string& flags, const std::string& wait_for, const std::vector<std::string>& gaps) {
    const std::string log = (dir_ / "job.log").string();
    std::string signals;
    for (const std::string& gap : gaps) signals += "sleep " + gap + "; kill -INT $P; ";
    const std::string script = "set -m; " + train_gpt_ + flags + " > " + log +
                               " 2>&1 & P=$!; "
                               "for i in $(seq 600); do grep -q \"" +
                               wait_for + "\" " + log + " && break; kill -0 $P || break; sleep 0.1; done; " +
                               signals + "wait $P; echo job exit $? >> " + log;
    const auto r = run_bounded("bash -c '" + script + "'", 200);
    std::string out = r.output;
    FILE* f = std::fopen(log.c_str(), "r");
    if (f != nullptr) {
      char buf[4096];
      for (std::size_t n = 0; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
      std::fclose(f);
    }
    return out;
  }

  static bool holds_checkpoint(const std::filesystem::path& run_dir) {
    if (!std::filesystem::exists(run_dir)) return false;
    const std::regex name(R"(step_[0-9]+)");
    for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
      if (std::regex_match(entry.path().filename().string(), name)) return true;
    }
    return false;
  }

  ScratchDir dir_{"interrupt"};
  std::string train_gpt_, data_;
};

TEST_F(Interrupt, CtrlCSavesDrawsThePlotsAndStopsCleanly) {
  const std::filesystem::path run_dir = dir_ / "run";
  const std::string metrics = (dir_ / "metrics.jsonl").string();
  const std::string flags = set_flag(tiny_run(data_), "--log-every", "20") + " --steps 1000000 --checkpoint-dir " +
                            run_dir.string() + " --metrics " + metrics;
  const std::string out = interrupted(flags, "step    20/", {"0"});
  EXPECT_NE(out.find("job exit 0"), std::string::npos) << out;
  EXPECT_NE(out.find("Ctrl-C again stops at once"), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("stop signal: saved step [0-9]+ to " + run_dir.string()))) << out;
  EXPECT_TRUE(holds_checkpoint(run_dir)) << out;
  EXPECT_TRUE(std::filesystem::exists(metrics + ".loss.svg")) << out;
  EXPECT_TRUE(std::filesystem::exists(metrics + ".throughput.svg")) << out;
}

TEST_F(Interrupt, ASecondCtrlCStopsAtOnce) {
  // Steps of a second or more (one thread), so both signals arrive within the first step after the
  // one logged: the first asks for a save at its end, the second ends the process before it.
  const std::filesystem::path run_dir = dir_ / "twice";
  const std::string flags = " --data " + data_ +
                            " --layers 4 --dim 256 --heads 4 --seq-len 16 --vocab 64 --micro-batch 128 "
                            "--sample-tokens 0 --eval-every 0 --log-every 1 --threads 1 --no-memory-check "
                            "--steps 1000 --checkpoint-dir " +
                            run_dir.string();
  const std::string out = interrupted(flags, "step     1/", {"0", "0.3"});
  EXPECT_NE(out.find("job exit 130"), std::string::npos) << out;
  EXPECT_EQ(out.find("stop signal"), std::string::npos) << "it went on to save:\n" << out;
  EXPECT_FALSE(holds_checkpoint(run_dir)) << out;
}

}  // namespace
}  // namespace tessera
