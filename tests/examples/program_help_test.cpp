// Every program answers --help without starting work: exit status 0, its usage with the general
// --help and --config options, quickly, and no floating default printed with 17 digits
// (0.10000000000000001 instead of 0.1). Programs that need MPI run under mpirun -np 1.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

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
    {"bench", "bench_activation_ckpt", false, "peak activations"},
    {"bench", "bench_comm", true, "# bench_comm:"},
    {"bench", "bench_memory", true, "largest |planned - measured|"},
    {"bench", "bench_offload", false, "planned "},
};

TEST(ProgramHelp, EveryProgramPrintsItsUsageAndExits) {
  const char* bin = std::getenv("TESSERA_BIN_DIR");
  if (bin == nullptr) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  const std::string build = std::string(bin) + "/..";
  const std::regex long_float(R"(\d\.\d{12,})");
  for (const ProgramCase& p : kPrograms) {
    const std::string path = build + "/" + p.dir + "/" + p.name;
    const std::string command = (p.mpi ? "mpirun --oversubscribe -np 1 " : "") + path + " --help";
    const auto start = std::chrono::steady_clock::now();
    const testing::ProcessResult r = testing::run_bounded(command, 60);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.output;
    EXPECT_NE(r.output.find(p.name), std::string::npos) << command << ": no usage\n" << r.output;
    EXPECT_NE(r.output.find("--help"), std::string::npos) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("--config FILE"), std::string::npos) << command << "\n" << r.output;
    EXPECT_EQ(r.output.find(p.work), std::string::npos) << command << " started working:\n" << r.output;
    std::smatch m;
    EXPECT_FALSE(std::regex_search(r.output, m, long_float))
        << command << " prints a default as " << m.str() << " (give it a textual form)\n"
        << r.output;
    EXPECT_LT(seconds, 30.0) << command;
  }
}

TEST(ProgramHelp, ComputingProgramsTakeADevice) {
  const char* bin = std::getenv("TESSERA_BIN_DIR");
  if (bin == nullptr) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  for (const ProgramCase& p : kPrograms) {
    if (p.name == "tessera_ckpt" || p.name == "tessera_plan" || p.name == "tessera_prepare" || p.name == "bench_comm") {
      continue;  // no device: files, the planner's meta device, text, MPI host buffers
    }
    const std::string command =
        (p.mpi ? "mpirun --oversubscribe -np 1 " : "") + std::string(bin) + "/../" + p.dir + "/" + p.name + " --help";
    const testing::ProcessResult r = testing::run_bounded(command, 60);
    EXPECT_NE(r.output.find("--device arg (=auto)"), std::string::npos) << command << "\n" << r.output;
  }
}

}  // namespace
}  // namespace tessera
