// Commands the programs print run as printed, from any directory:
//  * tessera_plan --recommend prints train_gpt by its real path with --data (absolute) and, for a
//    CPU plan, --device cpu; the printed command, run from another directory for 2 steps, trains;
//  * train_gpt without --data in a directory without data/corpus.bin says which absolute path it
//    looked for and how to make it (tessera_prepare by its real path), exits non-zero without an
//    MPI_ABORT, and says it once per job under mpirun.
// tessera-test-timeout: 240
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/concurrent_runs.hpp"
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

class ProgramPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("TESSERA_BIN_DIR");
    if (bin == nullptr) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    bin_ = std::filesystem::canonical(bin).string();
  }
  // `command` run in the scratch directory (not the repository, not the build directory).
  testing::ProcessResult in_scratch(const std::string& command) const {
    return in_dir(dir_.path(), command);
  }
  // `command` run by the shell in `dir` (run_bounded runs one program under timeout: here, sh).
  static testing::ProcessResult in_dir(const std::filesystem::path& dir, const std::string& command) {
    return run_bounded(in_dir_command(dir, command), 120);
  }
  // The command line of in_dir.
  static std::string in_dir_command(const std::filesystem::path& dir, const std::string& command) {
    return "sh -c '" + ("cd " + dir.string() + " && " + command) + "'";
  }

  ScratchDir dir_{"program_paths"};
  std::string bin_;
};

TEST_F(ProgramPaths, RecommendedCommandRunsAsPrinted) {
  const std::string data = (dir_ / "tokens.bin").string();
  write_token_file(data, random_tokens(20000, 300));
  // Relative --data: printed absolute. A plain `tessera_plan` found on PATH still prints train_gpt's real path.
  const auto plan = in_scratch("PATH=" + bin_ + ":$PATH tessera_plan --layers 2 --dim 64 --heads 2 --seq-len 32 "
                               "--vocab 512 --ranks 1 --device-memory 4GB --recommend --target cpu --data tokens.bin");
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  const std::size_t at = plan.output.find("command: ");
  ASSERT_NE(at, std::string::npos) << plan.output;
  const std::string command = plan.output.substr(at + 9, plan.output.find('\n', at) - at - 9);
  EXPECT_EQ(command.rfind(bin_ + "/train_gpt --data " + data + " --device cpu --layers 2 --dim 64 --heads 2", 0), 0u)
      << command;
  EXPECT_EQ(plan.output.find("does not exist yet"), std::string::npos) << plan.output;

  const std::filesystem::path elsewhere = dir_ / "elsewhere";
  std::filesystem::create_directory(elsewhere);
  ASSERT_EQ(command.find('\''), std::string::npos) << "the test runs it inside single quotes: " << command;
  // The printed command trains; without the data file, the command is printed with how to make it
  // (independent runs: at once).
  const std::vector<testing::ProcessResult> runs = testing::run_concurrently(
      {in_dir_command(elsewhere,
                      command + " --steps 2 --sample-tokens 0 --eval-every 0 --log-every 1 --progress plain"),
       in_dir_command(dir_.path(), bin_ + "/tessera_plan --layers 2 --dim 64 --heads 2 --seq-len 32 --vocab 512 "
                                          "--device-memory 4GB --recommend")});
  const testing::ProcessResult& trained = runs[0];
  ASSERT_EQ(trained.exit_code, 0) << command << "\n" << trained.output;
  EXPECT_NE(trained.output.find(" 2/2  loss "), std::string::npos) << trained.output;

  const testing::ProcessResult& missing = runs[1];
  EXPECT_NE(missing.output.find("command: " + bin_ + "/train_gpt --data " + (dir_ / "data/corpus.bin").string() +
                                " --layers"),
            std::string::npos)
      << missing.output;
  EXPECT_NE(missing.output.find("does not exist yet: make it with " + bin_ + "/tessera_prepare --out " +
                                (dir_ / "data/corpus.bin").string()),
            std::string::npos)
      << missing.output;
}

TEST_F(ProgramPaths, TrainGptWithoutTheDefaultCorpusSaysHowToMakeIt) {
  const std::string expected = "train_gpt: no token file at " + (dir_ / "data/corpus.bin").string() +
                               " (the default --data data/corpus.bin, relative to the current directory); make it "
                               "with: " +
                               bin_ + "/tessera_prepare --out " + (dir_ / "data/corpus.bin").string() +
                               ", or pass --data PATH";
  // Alone and as a job of 2 ranks, at once (neither writes anything).
  const std::vector<testing::ProcessResult> runs = testing::run_concurrently(
      {in_dir_command(dir_.path(), bin_ + "/train_gpt --steps 2"),
       in_dir_command(dir_.path(), testing::mpirun_expecting_failure(2) + bin_ + "/train_gpt --steps 2")});
  const testing::ProcessResult& alone = runs[0];
  EXPECT_NE(alone.exit_code, 0) << alone.output;
  EXPECT_EQ(count_of(alone.output, expected), 1u) << expected << "\n" << alone.output;
  EXPECT_EQ(alone.output.find("MPI_ABORT"), std::string::npos) << alone.output;
  EXPECT_EQ(alone.output.find("cannot open token file"), std::string::npos) << alone.output;

  const testing::ProcessResult& job = runs[1];
  EXPECT_NE(job.exit_code, 0) << job.output;
  EXPECT_EQ(count_of(job.output, "no token file at"), 1u) << job.output;
  EXPECT_EQ(job.output.find("MPI_ABORT"), std::string::npos) << job.output;
}

}  // namespace
}  // namespace tessera
