// What the programs do with wrong flags and inputs a user (or a file from elsewhere) hands them:
//  * errors name the program's flags, never the library's setting names ("--zero 7", not
//    "sharding.stage = 7"), in every program;
//  * tessera_eval / tessera_generate refuse or truncate with a notice: non-finite temperatures,
//    sequences beyond the model's context, a micro-batch that cannot fit (before allocating), token
//    lists that do not parse, data made by another tokenizer than the checkpoint's — as does a
//    training resume on such data, even when the padded vocabulary is the same;
//  * numbers parse strictly: out-of-range and garbage values name the flag or path;
//  * --config input is bounded: /dev/zero, a 10 MB key and a NUL end in a short, quick message.
// tessera-test-timeout: 240
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <regex>

#include "checkpoint_fault_support.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"
#include "tests/support/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

constexpr int kLimit = 60;

std::string program(const std::string& name) { return bin_dir() + "/" + name; }

// A library setting name in a message ("sharding.stage = 7"): what a program must have reworded.
bool names_library_setting(const std::string& output) {
  static const std::regex internal(
      R"(\b(sharding|checkpoint|model|optimizer|batch|run|schedule|precision|offload|export|eval|recompute|spike|plan)\.[a-z_.]+ = )");
  return std::regex_search(output, internal);
}

struct Refusal {
  std::string command, message;
};

void expect_refused(const Refusal& r) {
  const ChildResult result = run_child_job(r.command, kLimit);
  EXPECT_NE(result.exit_code, 0) << r.command << "\n" << result.output;
  EXPECT_TRUE(contains(result.output, r.message)) << r.command << "\nexpected: " << r.message << "\n" << result.output;
  EXPECT_FALSE(names_library_setting(result.output)) << r.command << "\n" << result.output;
  EXPECT_FALSE(contains(result.output, "stoll") || contains(result.output, "bad_alloc") ||
               contains(result.output, "json.exception"))
      << r.command << "\n" << result.output;
}

class ToolInput : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = (scratch_ / "bytes.bin").string();
    write_token_file(data_, random_tokens(20000, 40), TokenFileFormat::kLlmc, bytes_tokenizer_spec());
    run_ = scratch_ / "run";
    const ChildResult trained =
        run_child_job(tiny(data_, 2) + " --checkpoint-dir " + run_.string(), kLimit);
    ASSERT_EQ(trained.exit_code, 0) << trained.output;
  }

  std::string tiny(const std::string& data, int steps) const {
    std::string command = tiny_train_gpt(data, steps);
    return command.replace(command.find("--vocab 64"), 10, "--vocab 512");
  }

  ScratchDir scratch_{"tool_input"};
  std::string data_;
  fs::path run_;
};

TEST_F(ToolInput, EveryProgramNamesItsFlags) {
  std::string run = " ";  // appended: GCC 12 warns falsely (-Wrestrict) about " " + string
  run += run_.string();
  for (const Refusal& r : std::vector<Refusal>{
           {tiny(data_, 1) + " --checkpoint-compression zstd", "--checkpoint-compression zstd: is not known"},
           {tiny(data_, 1) + " --zero 7", "--zero 7: the ZeRO stage must be 0, 1, 2 or 3"},
           {tiny(data_, 1) + " --optimizer sgd", "--optimizer sgd"},
           {tiny(data_, 1) + " --offload-optimizer gpu", "--offload-optimizer gpu"},
           {program("tessera_generate") + run + " --zero 7", "--zero 7: the ZeRO stage must be 0, 1, 2 or 3"},
           {program("tessera_eval") + run + " --data " + data_ + " --zero 7", "--zero 7: the ZeRO stage"},
           {program("tessera_ckpt") + " export" + run + " " + (scratch_ / "x.h5").string() + " --dtype f64",
            "--dtype"},
           {program("tessera_plan") + " --model gpt2-124m --zero 7", "--zero 7"},
           {program("tessera_plan") + " --model gpt2-124m --ranks 0", "--ranks 0: must be >= 1"},
       }) {
    expect_refused(r);
  }
}

TEST_F(ToolInput, UsageErrorsComeFirstWithADidYouMeanAndNoRank) {
  for (const Refusal& r : std::vector<Refusal>{
           {tiny(data_, 1) + " --stpes 3", "unrecognised option '--stpes'; did you mean --steps?"},
           {tiny(data_, 1) + " --ste 3", "unrecognised option '--ste'"},  // no prefix guessing
           {tiny(data_, 0), "train_gpt: --steps must be positive, got 0"},
           {program("tessera_ckpt") + " infoo " + run_.string(), "unknown command 'infoo'; did you mean 'info'?"},
           {program("tessera_eval") + " x --eval-batchs 2", "did you mean --eval-batches?"},
           {program("tessera_prepare") + " --val-fraction 2", "--val-fraction 2 is outside [0, 1)"},
       }) {
    expect_refused(r);
    const ChildResult result = run_child_job(r.command, kLimit);
    EXPECT_FALSE(contains(result.output, "rank 0/1")) << r.command << "\n" << result.output;
    EXPECT_FALSE(contains(result.output, "2.000000")) << r.command << "\n" << result.output;
    // The error is the first thing printed (no configuration, device or data lines before it).
    EXPECT_NE(result.output.rfind(r.message), std::string::npos);
    EXPECT_TRUE(result.output.find(r.message) < result.output.find('\n')) << r.command << "\n" << result.output;
  }
}

TEST_F(ToolInput, EveryProgramPrintsItsVersion) {
  for (const std::string name :
       {"train_gpt", "tessera_ckpt", "tessera_eval", "tessera_generate", "tessera_plan", "tessera_prepare",
        "tessera_env"}) {
    const ChildResult result = run_child_job(program(name) + " --version", kLimit);
    EXPECT_EQ(result.exit_code, 0) << name << "\n" << result.output;
    std::string pattern = "^";  // appended: GCC 12 warns falsely (-Wrestrict) on a chain of + here
    pattern.append(name).append(R"( \(Tessera [0-9]+\.[0-9]+\.[0-9]+, git [^)]+\))");
    EXPECT_TRUE(std::regex_search(result.output, std::regex(pattern))) << name << "\n" << result.output;
  }
}

TEST_F(ToolInput, TheEnvironmentReportIsPrintedAndRecordedInCheckpoints) {
  const ChildResult env = run_child_job(program("tessera_env"), kLimit);
  ASSERT_EQ(env.exit_code, 0) << env.output;
  for (const char* part : {"git revision", "build type", "compiler", "MPI ", "Open MPI", "HDF5", "Boost", "OpenBLAS",
                           "OPENBLAS_CORETYPE", "GPUs seen", "avx2", "avx512f", "fma", "OpenMP threads",
                           "CPU kernel level"}) {
    EXPECT_TRUE(contains(env.output, part)) << part << "\n" << env.output;
  }
  EXPECT_TRUE(std::regex_search(env.output, std::regex("CPU kernel level +(portable|avx2|avx512) \\(built: ")))
      << "the level this process runs\n" << env.output;
  const ChildResult forced = run_child_job("env TESSERA_CPU_KERNELS=portable " + program("tessera_env"), kLimit);
  EXPECT_TRUE(std::regex_search(forced.output, std::regex("CPU kernel level +portable \\(built: "))) << forced.output;
  const ChildResult same = run_child_job(tiny(data_, 1) + " --env", kLimit);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_TRUE(contains(same.output, "OPENBLAS_CORETYPE")) << same.output;
  EXPECT_FALSE(contains(same.output, "step ")) << "--env trained:\n" << same.output;
  const ChildResult info = run_child_job(program("tessera_ckpt") + " info " + run_.string(), kLimit);
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_TRUE(contains(info.output, "environment    where the run that saved it ran:")) << info.output;
  EXPECT_TRUE(contains(info.output, "HDF5")) << info.output;
}

TEST_F(ToolInput, InferenceToolsCheckWhatTheyAreAsked) {
  const std::string eval = program("tessera_eval") + " " + run_.string();
  const std::string generate = program("tessera_generate") + " " + run_.string() + " --length 2";
  for (const Refusal& r : std::vector<Refusal>{
           {generate + " --temperature nan", "--temperature nan: must be a finite number >= 0"},
           {generate + " --temperature inf", "--temperature inf: must be a finite number >= 0"},
           {eval + " --data " + data_ + " --seq-len 100", "--seq-len: 100 positions, longer than the model's context of 16"},
           {eval + " --data " + data_ + " --micro-batch 100000000", "--micro-batch 100000000: a forward of"},
           {eval + " --print-logits --tokens 1,,2", "--tokens item 2 (a token id of the model) = '': not an integer"},
           {eval + " --print-logits --tokens 99999999999999999999", "--tokens item 1 (a token id of the model) = "
                                                                    "'99999999999999999999': out of range"},
           {eval + " --print-logits --tokens 1" + [] {
              std::string more;
              for (int i = 1; i < 20; ++i) more += ",1";
              return more;
            }(),
            "--tokens: 20 positions, longer than the model's context of 16"},
       }) {
    expect_refused(r);
  }
  // A prompt beyond the context: the model sees its end, and says so.
  const ChildResult long_prompt = run_child_job(generate + " --prompt " + std::string(40, 'x'), kLimit);
  EXPECT_EQ(long_prompt.exit_code, 0) << long_prompt.output;
  EXPECT_TRUE(contains(long_prompt.output, "--prompt: 40 tokens, longer than the model's context of 16"))
      << long_prompt.output;
}

TEST_F(ToolInput, DataOfAnotherTokenizerIsRefused) {
  const std::string other = (scratch_ / "bpe.bin").string();
  TokenizerSpec bpe{TokenizerKind::kBpe, "", 300, 0x1234};
  write_token_file(other, random_tokens(20000, 40), TokenFileFormat::kLlmc, bpe);
  expect_refused({program("tessera_eval") + " " + run_.string() + " --data " + other,
                  other + ": its tokens are another tokenizer's than the model's: bytes with 257 tokens vs bpe with "
                          "300 tokens"});
  expect_refused({tiny(other, 4) + " --checkpoint-dir " + run_.string() + " --resume auto",
                  "was trained on another tokenizer's tokens than this run's data: bytes with 257 tokens vs bpe "
                  "with 300 tokens"});
}

TEST_F(ToolInput, NumbersParseStrictly) {
  expect_refused({program("tessera_plan") + " --params 1e30", "--params: '1e30' is too large"});
  // A stray directory named like a checkpoint is skipped with a warning, never a stoll message.
  fs::create_directories(run_ / "step_99999999999999999999");
  const ChildResult info = run_child_job(program("tessera_ckpt") + " info " + run_.string(), kLimit);
  EXPECT_EQ(info.exit_code, 0) << info.output;
  const ChildResult resumed = run_child_job(
      tiny(data_, 3) + " --checkpoint-dir " + run_.string() + " --resume auto --keep-last 2", kLimit);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "step_99999999999999999999: not a checkpoint")) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "at step 2")) << resumed.output;
}

TEST_F(ToolInput, ConfigInputIsBounded) {
  const std::string huge = (scratch_ / "huge.ini").string(), nul = (scratch_ / "nul.ini").string();
  std::ofstream(huge) << std::string(10 << 20, 'k') << " = 1\n";
  std::ofstream(nul, std::ios::binary) << std::string("lr = 0.1\0x\n", 11);
  for (const Refusal& r : std::vector<Refusal>{
           {tiny(data_, 1) + " --config /dev/zero", "--config /dev/zero: larger than 1 MiB"},
           {tiny(data_, 1) + " --config " + huge, "--config " + huge + ": larger than 1 MiB"},
           {tiny(data_, 1) + " --config " + nul, nul + ":1: a NUL byte in 'lr = 0.1\\x00x'"},
       }) {
    const auto start = std::chrono::steady_clock::now();
    expect_refused(r);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << r.command;
    EXPECT_LT(run_child_job(r.command, kLimit).output.size(), 4096u) << r.command << ": the message echoes the input";
  }
  const std::string long_line = (scratch_ / "long.ini").string();
  std::ofstream(long_line) << std::string(100000, 'k') << " = 1\n";
  expect_refused({tiny(data_, 1) + " --config " + long_line, long_line + ":1: a line of 100004 characters (at most 4096)"});
}

}  // namespace
}  // namespace tessera::testing
