// Commands the programs print run as printed, from any directory:
//  * tessera_plan --recommend prints train_gpt by its real path with --data (absolute) and, for a
//    CPU plan, --device cpu; the printed command, run from another directory for 2 steps, trains;
//  * train_gpt without --data in a directory without data/corpus.bin says which absolute path it
//    looked for and how to make it (tessera_prepare by its real path), exits non-zero without an
//    MPI_ABORT, and says it once per job under mpirun.
// The tests' runs are queued together when the suite starts; each test checks its own.
// tessera-test-timeout: 240
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "tests/support/queued_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::run_bounded;
using testing::ScratchDir;

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The command tessera_plan printed (after "command: "), or "".
std::string printed_command(const std::string& output) {
  const std::size_t at = output.find("command: ");
  return at == std::string::npos ? "" : output.substr(at + 9, output.find('\n', at) - at - 9);
}

// The tests' runs are independent (none writes into the scratch directory but the one trained
// elsewhere): they are queued together when the suite starts (QueuedRuns) and each test checks its
// own.
class ProgramPaths : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* bin = std::getenv("TESSERA_BIN_DIR");
    if (bin == nullptr) return;
    bin_ = std::filesystem::canonical(bin).string();
    dir_ = std::make_unique<ScratchDir>("program_paths");
    runs_ = std::make_unique<testing::QueuedRuns>();
    // RecommendedCommandRunsAsPrinted: relative --data (printed absolute), a plain `tessera_plan`
    // found on PATH; then the printed command, run from another directory for 2 steps (in single
    // quotes: not when it holds one).
    write_token_file(path("tokens.bin"), random_tokens(20000, 300));
    std::filesystem::create_directory(*dir_ / "elsewhere");
    runs_->queue("plan, trained", [] {
      std::vector<testing::ProcessResult> results{
          in_dir(dir_->path(), "PATH=" + bin_ +
                                   ":$PATH tessera_plan --layers 2 --dim 64 --heads 2 --seq-len 32 --vocab 512 "
                                   "--ranks 1 --device-memory 4GB --recommend --target cpu --data tokens.bin")};
      const std::string command = printed_command(results[0].output);
      if (results[0].exit_code == 0 && !command.empty() && command.find('\'') == std::string::npos) {
        results.push_back(in_dir(*dir_ / "elsewhere", command + " --steps 2 --sample-tokens 0 --eval-every 0 "
                                                                "--log-every 1 --progress plain"));
      }
      return results;
    });
    // ...: without the data file, the command is printed with how to make it.
    runs_->queue("missing",
                 in_dir_command(dir_->path(), bin_ + "/tessera_plan --layers 2 --dim 64 --heads 2 --seq-len 32 "
                                                     "--vocab 512 --device-memory 4GB --recommend"));
    // TrainGptWithoutTheDefaultCorpusSaysHowToMakeIt: alone and as a job of 2 ranks.
    runs_->queue("alone", in_dir_command(dir_->path(), bin_ + "/train_gpt --steps 2"));
    runs_->queue("job",
                 in_dir_command(dir_->path(), testing::mpirun_expecting_failure(2) + bin_ + "/train_gpt --steps 2"));
  }
  static void TearDownTestSuite() {
    runs_.reset();  // before the files it runs on
    dir_.reset();
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }

  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  // `command` run by the shell in `dir` (run_bounded runs one program under timeout: here, sh).
  static testing::ProcessResult in_dir(const std::filesystem::path& dir, const std::string& command) {
    return run_bounded(in_dir_command(dir, command), 120);
  }
  // The command line of in_dir.
  static std::string in_dir_command(const std::filesystem::path& dir, const std::string& command) {
    return "sh -c '" + ("cd " + dir.string() + " && " + command) + "'";
  }

  static inline std::unique_ptr<ScratchDir> dir_;
  static inline std::string bin_;
  static inline std::unique_ptr<testing::QueuedRuns> runs_;
};

TEST_F(ProgramPaths, RecommendedCommandRunsAsPrinted) {
  const std::string data = path("tokens.bin");
  const std::vector<testing::ProcessResult>& runs = runs_->results("plan, trained");
  const testing::ProcessResult& plan = runs[0];
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  const std::string command = printed_command(plan.output);
  ASSERT_FALSE(command.empty()) << plan.output;
  EXPECT_EQ(command.rfind(bin_ + "/train_gpt --data " + data + " --device cpu --layers 2 --dim 64 --heads 2", 0), 0u)
      << command;
  EXPECT_EQ(plan.output.find("does not exist yet"), std::string::npos) << plan.output;

  ASSERT_EQ(command.find('\''), std::string::npos) << "the test runs it inside single quotes: " << command;
  const testing::ProcessResult& trained = runs.at(1);
  ASSERT_EQ(trained.exit_code, 0) << command << "\n" << trained.output;
  EXPECT_NE(trained.output.find(" 2/2  loss "), std::string::npos) << trained.output;

  const testing::ProcessResult& missing = runs_->result("missing");
  EXPECT_NE(missing.output.find("command: " + bin_ + "/train_gpt --data " + path("data/corpus.bin") + " --layers"),
            std::string::npos)
      << missing.output;
  EXPECT_NE(missing.output.find("does not exist yet: make it with " + bin_ + "/tessera_prepare --out " +
                                path("data/corpus.bin")),
            std::string::npos)
      << missing.output;
}

TEST_F(ProgramPaths, TrainGptWithoutTheDefaultCorpusSaysHowToMakeIt) {
  const std::string expected = "train_gpt: no token file at " + path("data/corpus.bin") +
                               " (the default --data data/corpus.bin, relative to the current directory); make it "
                               "with: " +
                               bin_ + "/tessera_prepare --out " + path("data/corpus.bin") + ", or pass --data PATH";
  const testing::ProcessResult& alone = runs_->result("alone");
  EXPECT_NE(alone.exit_code, 0) << alone.output;
  EXPECT_EQ(count_of(alone.output, expected), 1u) << expected << "\n" << alone.output;
  EXPECT_EQ(alone.output.find("MPI_ABORT"), std::string::npos) << alone.output;
  EXPECT_EQ(alone.output.find("cannot open token file"), std::string::npos) << alone.output;

  const testing::ProcessResult& job = runs_->result("job");
  EXPECT_NE(job.exit_code, 0) << job.output;
  EXPECT_EQ(count_of(job.output, "no token file at"), 1u) << job.output;
  EXPECT_EQ(job.output.find("MPI_ABORT"), std::string::npos) << job.output;
}

}  // namespace
}  // namespace tessera
