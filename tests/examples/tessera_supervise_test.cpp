// tessera_supervise starts a command again whenever it dies: a command failing twice ends well on
// its third start; one that keeps failing (or is killed) is given up after --restarts, with its
// status; a SIGTERM to the supervisor goes to the command and is not followed by a restart; and a
// 2-rank train_gpt job with --resume auto whose rank is killed mid-run is restarted, resumes from
// its last checkpoint and ends at its last step, the metrics file recording the restart.
// tessera-test-timeout: 200
// tessera-test-cost: 12
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tessera/training/metrics_log.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::ProcessResult;
using testing::run_bounded;

class TesseraSupervise : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("TESSERA_BIN_DIR");
    if (bin == nullptr) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    bin_ = bin;
  }
  std::string supervise(const std::string& flags) const {
    return "cd " + dir_.path().string() + " && exec " + bin_ + "/tessera_supervise --restart-delay 0 " + flags;
  }
  std::string bin_;
  testing::ScratchDir dir_{"supervise"};
};

TEST_F(TesseraSupervise, RestartsACommandUntilItEndsWell) {
  const ProcessResult r = run_bounded("sh -c " + std::string("'") +
                                          supervise("--restarts 5 -- sh -c \"n=\\$(cat count 2>/dev/null || echo 0); "
                                                    "echo \\$((n + 1)) > count; [ \\$n -ge 2 ]\"") +
                                          "'",
                                      60);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ifstream count(dir_ / "count");
  int starts = 0;
  count >> starts;
  EXPECT_EQ(starts, 3) << r.output;
  EXPECT_NE(r.output.find("the command exited with status 1 after"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("restart 2 of 5"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the command ended well after 2 restart(s)"), std::string::npos) << r.output;
}

TEST_F(TesseraSupervise, GivesUpAfterItsRestartsWithTheCommandsStatus) {
  const ProcessResult failing = run_bounded("sh -c '" + supervise("--restarts 2 -- sh -c \"exit 3\"") + "'", 60);
  EXPECT_EQ(failing.exit_code, 3) << failing.output;
  EXPECT_NE(failing.output.find("giving up after 2 restart(s) (--restarts 2)"), std::string::npos) << failing.output;
  const ProcessResult killed = run_bounded("sh -c '" + supervise("--restarts 1 -- sh -c \"kill -9 \\$\\$\"") + "'", 60);
  EXPECT_EQ(killed.exit_code, 137) << killed.output;
  EXPECT_NE(killed.output.find("was killed by signal 9"), std::string::npos) << killed.output;
  const ProcessResult no_command = run_bounded(bin_ + "/tessera_supervise --restarts 1", 20);
  EXPECT_EQ(no_command.exit_code, 2) << no_command.output;
  EXPECT_NE(no_command.output.find("give the command to run after --"), std::string::npos) << no_command.output;
}

TEST_F(TesseraSupervise, ASignalGoesToTheCommandAndEndsTheSupervision) {
  const std::string log = (dir_ / "signal.log").string();
  const ProcessResult r = run_bounded("bash -c '" + supervise("--restarts 5 -- sleep 30") + " > " + log +
                                          " 2>&1 & S=$!; sleep 0.5; kill -TERM $S; wait $S; echo supervisor exit $?'",
                                      60);
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(r.output.find("supervisor exit 143"), std::string::npos) << r.output << output;
  EXPECT_NE(output.find("was killed by signal 15"), std::string::npos) << output;
  EXPECT_NE(output.find("not restarting"), std::string::npos) << output;
}

TEST_F(TesseraSupervise, ATrainingJobKilledMidRunResumesAndEnds) {
  write_token_file((dir_ / "tokens.bin").string(), testing::random_tokens(20000, 60));
  const std::string data = (dir_ / "tokens.bin").string();
  const std::string log = (dir_ / "job.log").string();
  const std::string job =
      supervise("--restarts 3 -- mpirun --oversubscribe --mca odls_base_sigkill_timeout 0 -np 2 " + bin_ +
                "/train_gpt" + testing::tiny_run(data) +
                " --micro-batch 2 --steps 600 --save-every 5 --keep-last 2 --checkpoint-dir run --resume auto "
                "--metrics metrics.jsonl --progress plain");
  // Kill one rank once the job has logged step 10 (step 5 saved, step 10 logged before its save), then
  // wait for the end.
  const ProcessResult r = run_bounded("bash -c '" + job + " > " + log +
                                          " 2>&1 & S=$!; for i in $(seq 1200); do grep -qE \"step +10/600\" " + log +
                                          " && break; sleep 0.05; done; pkill -9 -n -f \"[t]rain_gpt --data " + data +
                                          "\"; wait $S; echo supervisor exit $?'",
                                      150);
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(r.output.find("supervisor exit 0"), std::string::npos) << r.output << output;
  EXPECT_NE(output.find("restart 1 of 3"), std::string::npos) << output;
  EXPECT_NE(output.find("resumed from " + (dir_ / "run").string() + "/step_"), std::string::npos) << output;
  EXPECT_NE(output.find("the command ended well after 1 restart(s)"), std::string::npos) << output;
  const MetricsSeries series = read_metrics_file((dir_ / "metrics.jsonl").string());
  ASSERT_EQ(series.train_step.size(), 600u) << "each step once";
  EXPECT_EQ(series.train_step.back(), 600);
  ASSERT_EQ(series.resumes.size(), 1u);
  EXPECT_GE(series.resumes[0].step, 5);  // step 10 is logged before it is saved
  EXPECT_EQ(std::filesystem::read_symlink(dir_ / "run" / "latest").filename(), "step_0000600");
}

}  // namespace
}  // namespace tessera
