// Every program answers --help without starting work: exit status 0, its usage with the general
// --help and --config options, quickly, and no floating default printed with 17 digits
// (0.10000000000000001 instead of 0.1). Programs that need MPI run under mpirun -np 1. Every
// program's --help runs once, all at once, for both tests.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/concurrent_runs.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

struct ProgramCase {
  std::string dir;  // examples or bench
  std::string name;
  bool mpi;          // the program runs its body under run_distributed
  std::string work;  // a line only real work prints
};

const std::vector<ProgramCase> kPrograms = {
    {"examples", "train_gpt", true, "train_gpt: GPT"},
    {"examples", "tessera_ckpt", false, "tokens seen"},
    {"examples", "tessera_plan", false, "peak per rank"},
    {"examples", "tessera_prepare", false, "wrote "},
    {"examples", "tessera_eval", true, "val loss"},
    {"examples", "tessera_generate", true, "tessera_generate: GPT"},
    {"examples", "tessera_supervise", false, "restart 1 of"},
    {"bench", "bench_activation_ckpt", false, "peak activations"},
    {"bench", "bench_comm", true, "# bench_comm:"},
    {"bench", "bench_memory", true, "largest |planned - measured|"},
    {"bench", "bench_offload", false, "planned "},
};

// `<program> --help` of every program (under mpirun -np 1 for those that need MPI), at once, each
// with the seconds it took.
struct HelpRun {
  std::string command;
  testing::ProcessResult result;
  double seconds = 0.0;
};
std::vector<HelpRun> help_of_every_program(const std::string& bin) {
  std::vector<std::string> commands;
  for (const ProgramCase& p : kPrograms) {
    commands.push_back((p.mpi ? "mpirun --oversubscribe -np 1 " : "") + bin + "/../" + p.dir + "/" + p.name +
                       " --help");
  }
  std::vector<double> seconds;
  const std::vector<testing::ProcessResult> results =
      testing::run_concurrently(commands, 60, testing::kConcurrentRuns, &seconds);
  std::vector<HelpRun> runs;
  for (std::size_t i = 0; i < commands.size(); ++i) runs.push_back({commands[i], results[i], seconds[i]});
  return runs;
}

class ProgramHelp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* bin = std::getenv("TESSERA_BIN_DIR");
    if (bin != nullptr) runs_ = help_of_every_program(bin);
  }
  void SetUp() override {
    if (runs_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }
  static inline std::vector<HelpRun> runs_;  // one per kPrograms entry
};

TEST_F(ProgramHelp, EveryProgramPrintsItsUsageAndExits) {
  const std::regex long_float(R"(\d\.\d{12,})");
  for (std::size_t i = 0; i < kPrograms.size(); ++i) {
    const ProgramCase& p = kPrograms[i];
    const std::string& command = runs_[i].command;
    const testing::ProcessResult& r = runs_[i].result;
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.output;
    EXPECT_NE(r.output.find(p.name), std::string::npos) << command << ": no usage\n" << r.output;
    EXPECT_NE(r.output.find("--help"), std::string::npos) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("--config FILE"), std::string::npos) << command << "\n" << r.output;
    EXPECT_EQ(r.output.find(p.work), std::string::npos) << command << " started working:\n" << r.output;
    std::smatch m;
    EXPECT_FALSE(std::regex_search(r.output, m, long_float))
        << command << " prints a default as " << m.str() << " (give it a textual form)\n"
        << r.output;
    EXPECT_LT(runs_[i].seconds, 30.0) << command;
  }
}

TEST_F(ProgramHelp, ComputingProgramsTakeADevice) {
  for (std::size_t i = 0; i < kPrograms.size(); ++i) {
    const ProgramCase& p = kPrograms[i];
    if (p.name == "tessera_ckpt" || p.name == "tessera_plan" || p.name == "tessera_prepare" || p.name == "bench_comm" ||
        p.name == "tessera_supervise") {
      continue;  // no device: files, the planner's meta device, text, MPI host buffers, another program
    }
    EXPECT_NE(runs_[i].result.output.find("--device arg (=auto)"), std::string::npos) << runs_[i].command << "\n"
                                                                                      << runs_[i].result.output;
  }
}

}  // namespace
}  // namespace tessera
