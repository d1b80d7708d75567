// Ctrl-C (SIGINT) to a lone train_gpt: the first one saves at the next step boundary, draws the
// metrics plots and stops cleanly (exit 0), as SIGUSR1 does; a second one stops at once, without
// saving (the process ends by SIGINT). The jobs run with job control on (`set -m`), as from a
// terminal: a background job of a script without it starts with SIGINT ignored, and keeps it so.
// tessera-test-timeout: 300
#include <gtest/gtest.h>

#include <filesystem>
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

class Interrupt : public testing::TrainGptTest {
 protected:
  Interrupt() : TrainGptTest("interrupt", 20000, 40) {}
  // Starts `train_gpt <flags>` in the background, waits for `wait_for` in its log, then, for each
  // entry of `signals`, waits for that text in the log ("" for none) and sends it SIGINT; then waits
  // for it. Returns the log, then "SIGINT sent to a running process" per signal that found the
  // process alive, then "job exit N" (130: ended by SIGINT).
  std::string interrupted(const std::string& flags, const std::string& wait_for,
                          const std::vector<std::string>& signals) {
    const std::string log = (dir_ / "job.log").string(), sent = (dir_ / "sent.log").string();
    const auto wait_in_log = [&](const std::string& text) {
      return "for i in $(seq 3000); do grep -q \"" + text + "\" " + log +
             " && break; kill -0 $P || break; sleep 0.02; done; ";
    };
    std::string script = "set -m; " + train_gpt_ + flags + " > " + log + " 2>&1 & P=$!; " + wait_in_log(wait_for);
    for (const std::string& text : signals) {
      if (!text.empty()) script += wait_in_log(text);
      script += "kill -INT $P && echo SIGINT sent to a running process >> " + sent + "; ";
    }
    script += "wait $P; echo job exit $? >> " + sent;
    const auto r = run_bounded("bash -c '" + script + "'", 200);
    return r.output + read_file(log) + read_file(sent);
  }

  static std::string read_file(const std::string& path) {
    std::string text;
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return text;
    char buf[4096];
    for (std::size_t n = 0; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
    return text;
  }

  static bool holds_checkpoint(const std::filesystem::path& run_dir) {
    if (!std::filesystem::exists(run_dir)) return false;
    const std::regex name(R"(step_[0-9]+)");
    for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
      if (std::regex_match(entry.path().filename().string(), name)) return true;
    }
    return false;
  }
};

TEST_F(Interrupt, CtrlCSavesDrawsThePlotsAndStopsCleanly) {
  const std::filesystem::path run_dir = dir_ / "run";
  const std::string metrics = (dir_ / "metrics.jsonl").string();
  const std::string flags = set_flag(tiny_run(data_), "--log-every", "20") + " --steps 1000000 --checkpoint-dir " +
                            run_dir.string() + " --metrics " + metrics;
  const std::string out = interrupted(flags, "step    20/", {""});
  EXPECT_NE(out.find("job exit 0"), std::string::npos) << out;
  EXPECT_NE(out.find("Ctrl-C again stops at once"), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("stop signal: saved step [0-9]+ to " + run_dir.string()))) << out;
  EXPECT_TRUE(holds_checkpoint(run_dir)) << out;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "metrics.loss.svg")) << out;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "metrics.throughput.svg")) << out;
}

TEST_F(Interrupt, ASecondCtrlCStopsAtOnce) {
  // The first Ctrl-C during step 1 asks for a save at its end; the second is sent as soon as the
  // first has been answered on stderr, and steps take over a second here (12.6M parameters, 2048
  // tokens a step, one thread), so it arrives long before step 1 ends: the process ends by SIGINT
  // without saving. The first is sent once the GEMM ceiling is printed: the run has been set up (its
  // stop-signal handlers with it) and training starts.
  const std::filesystem::path run_dir = dir_ / "twice";
  const std::string flags = " --data " + data_ +
                            " --layers 4 --dim 512 --heads 4 --seq-len 16 --vocab 64 --micro-batch 128 "
                            "--sample-tokens 0 --eval-every 0 --log-every 1 --threads 1 --no-memory-check "
                            "--steps 1000 --checkpoint-dir " +
                            run_dir.string();
  const std::string out = interrupted(flags, "GEMM ceiling", {"", "Ctrl-C again stops at once"});
  std::size_t sent = 0;
  for (std::size_t at = out.find("SIGINT sent to a running process"); at != std::string::npos;
       at = out.find("SIGINT sent to a running process", at + 1)) {
    ++sent;
  }
  ASSERT_EQ(sent, 2u) << "the run ended before the second Ctrl-C:\n" << out;
  EXPECT_NE(out.find("job exit 130"), std::string::npos) << out;
  EXPECT_EQ(out.find("stop signal"), std::string::npos) << "it went on to save:\n" << out;
  EXPECT_EQ(out.find("step     1/"), std::string::npos) << "step 1 ended:\n" << out;
  EXPECT_FALSE(holds_checkpoint(run_dir)) << out;
}

}  // namespace
}  // namespace tessera
