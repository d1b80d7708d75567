// What the programs do with wrong flags and inputs a user (or a file from elsewhere) hands them:
//  * errors name the program's flags, never the library's setting names ("--zero 7", not
//    "sharding.stage = 7"), in every program;
//  * tessera_eval / tessera_generate refuse or truncate with a notice: non-finite temperatures,
//    sequences beyond the model's context, a micro-batch that cannot fit (before allocating), token
//    lists that do not parse, data made by another tokenizer than the checkpoint's — as does a
//    training resume on such data, even when the padded vocabulary is the same;
//  * numbers parse strictly: out-of-range and garbage values name the flag or path;
//  * --config input is bounded: /dev/zero, a 10 MB key and a NUL end in a short, quick message.
// The checkpoint the tools read is trained once for the suite; a test that resumes it works on a copy
// of its own. Each test's programs run at once (they read, never write, what they share) and every
// output is checked as before.
// tessera-test-timeout: 240
// tessera-test-cost: 11
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <regex>

#include "checkpoint_fault_support.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

constexpr int kToolLimit = 60;

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

// A refusal's checks on the program's `result`; returns it for further checks.
const ChildResult& expect_refused(const Refusal& r, const ChildResult& result) {
  EXPECT_NE(result.exit_code, 0) << r.command << "\n" << result.output;
  EXPECT_TRUE(contains(result.output, r.message)) << r.command << "\nexpected: " << r.message << "\n" << result.output;
  EXPECT_FALSE(names_library_setting(result.output)) << r.command << "\n" << result.output;
  EXPECT_FALSE(contains(result.output, "stoll") || contains(result.output, "bad_alloc") ||
               contains(result.output, "json.exception"))
      << r.command << "\n"
      << result.output;
  return result;
}

// Runs every refusal's command at once; checks each as expect_refused does, in order, and returns
// the results.
std::vector<ChildResult> run_refused_all(const std::vector<Refusal>& refusals) {
  std::vector<std::string> commands;
  for (const Refusal& r : refusals) commands.push_back(r.command);
  const std::vector<ChildResult> results = run_child_jobs(commands, kToolLimit);
  for (std::size_t i = 0; i < refusals.size(); ++i) expect_refused(refusals[i], results[i]);
  return results;
}

class ToolInput : public ::testing::Test {
 protected:
  // The token file and the 2-step run every test reads, made once.
  static void SetUpTestSuite() {
    scratch_ = new ScratchDir("tool_input");
    data_ = (*scratch_ / "bytes.bin").string();
    write_token_file(data_, random_tokens(20000, 40), TokenFileFormat::kLlmc, bytes_tokenizer_spec());
    run_ = *scratch_ / "run";
    trained_ = new ChildResult(run_child_job(tiny(data_, 2) + " --checkpoint-dir " + run_.string(), kToolLimit));
  }
  static void TearDownTestSuite() {
    delete trained_;
    delete scratch_;
  }
  void SetUp() override { ASSERT_EQ(trained_->exit_code, 0) << trained_->output; }

  static std::string tiny(const std::string& data, int steps) {
    std::string command = tiny_train_gpt(data, steps);
    return command.replace(command.find("--vocab 64"), 10, "--vocab 512");
  }
  // A copy of the trained run for a test that resumes it (a resume writes into its directory).
  static fs::path copy_of_run(const std::string& name) {
    const fs::path copy = *scratch_ / name;
    fs::copy(run_, copy, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    return copy;
  }

  static ScratchDir* scratch_;
  static std::string data_;
  static fs::path run_;
  static ChildResult* trained_;
};

ScratchDir* ToolInput::scratch_ = nullptr;
std::string ToolInput::data_;
fs::path ToolInput::run_;
ChildResult* ToolInput::trained_ = nullptr;

TEST_F(ToolInput, EveryProgramNamesItsFlags) {
  std::string run = " ";  // appended: GCC 12 warns falsely (-Wrestrict) about " " + string
  run += run_.string();
  run_refused_all({
      {tiny(data_, 1) + " --checkpoint-compression zstd", "--checkpoint-compression zstd: is not known"},
      {tiny(data_, 1) + " --zero 7", "--zero 7: the ZeRO stage must be 0, 1, 2 or 3"},
      {tiny(data_, 1) + " --optimizer sgd", "--optimizer sgd"},
      {tiny(data_, 1) + " --offload-optimizer gpu", "--offload-optimizer gpu"},
      {program("tessera_generate") + run + " --zero 7", "--zero 7: the ZeRO stage must be 0, 1, 2 or 3"},
      {program("tessera_eval") + run + " --data " + data_ + " --zero 7", "--zero 7: the ZeRO stage"},
      {program("tessera_ckpt") + " export" + run + " " + (*scratch_ / "x.h5").string() + " --dtype f64", "--dtype"},
      {program("tessera_plan") + " --model gpt2-124m --zero 7", "--zero 7"},
      {program("tessera_plan") + " --model gpt2-124m --ranks 0", "--ranks 0: must be >= 1"},
  });
}

TEST_F(ToolInput, UsageErrorsComeFirstWithADidYouMeanAndNoRank) {
  const std::vector<Refusal> refusals = {
      {tiny(data_, 1) + " --stpes 3", "unrecognised option '--stpes'; did you mean --steps?"},
      {tiny(data_, 1) + " --ste 3", "unrecognised option '--ste'"},  // no prefix guessing
      {tiny(data_, 0), "train_gpt: --steps must be positive, got 0"},
      {program("tessera_ckpt") + " infoo " + run_.string(), "unknown command 'infoo'; did you mean 'info'?"},
      {program("tessera_eval") + " x --eval-batchs 2", "did you mean --eval-batches?"},
      {program("tessera_prepare") + " --val-fraction 2", "--val-fraction 2 is outside [0, 1)"},
  };
  const std::vector<ChildResult> results = run_refused_all(refusals);
  for (std::size_t i = 0; i < refusals.size(); ++i) {
    const Refusal& r = refusals[i];
    const ChildResult& result = results[i];
    EXPECT_FALSE(contains(result.output, "rank 0/1")) << r.command << "\n" << result.output;
    EXPECT_FALSE(contains(result.output, "2.000000")) << r.command << "\n" << result.output;
    // The error is the first thing printed (no configuration, device or data lines before it).
    EXPECT_NE(result.output.rfind(r.message), std::string::npos);
    EXPECT_TRUE(result.output.find(r.message) < result.output.find('\n')) << r.command << "\n" << result.output;
  }
}

TEST_F(ToolInput, EveryProgramPrintsItsVersion) {
  const std::vector<std::string> names = {"train_gpt",    "tessera_ckpt",    "tessera_eval", "tessera_generate",
                                          "tessera_plan", "tessera_prepare", "tessera_env"};
  std::vector<std::string> commands;
  for (const std::string& name : names) commands.push_back(program(name) + " --version");
  const std::vector<ChildResult> results = run_child_jobs(commands, kToolLimit);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const ChildResult& result = results[i];
    EXPECT_EQ(result.exit_code, 0) << name << "\n" << result.output;
    std::string pattern = "^";  // appended: GCC 12 warns falsely (-Wrestrict) on a chain of + here
    pattern.append(name).append(R"( \(Tessera [0-9]+\.[0-9]+\.[0-9]+, git [^)]+\))");
    EXPECT_TRUE(std::regex_search(result.output, std::regex(pattern))) << name << "\n" << result.output;
  }
}

TEST_F(ToolInput, TheEnvironmentReportIsPrintedAndRecordedInCheckpoints) {
  const std::vector<ChildResult> results =
      run_child_jobs({program("tessera_env"), "env TESSERA_CPU_KERNELS=portable " + program("tessera_env"),
                      tiny(data_, 1) + " --env", program("tessera_ckpt") + " info " + run_.string()},
                     kToolLimit);
  const ChildResult &env = results[0], &forced = results[1], &same = results[2], &info = results[3];
  ASSERT_EQ(env.exit_code, 0) << env.output;
  for (const char* part :
       {"git revision", "build type", "compiler", "MPI ", "Open MPI", "HDF5", "Boost", "OpenBLAS", "OPENBLAS_CORETYPE",
        "GPUs seen", "avx2", "avx512f", "fma", "OpenMP threads", "CPU kernel level"}) {
    EXPECT_TRUE(contains(env.output, part)) << part << "\n" << env.output;
  }
  EXPECT_TRUE(std::regex_search(env.output, std::regex("CPU kernel level +(portable|avx2|avx512) \\(built: ")))
      << "the level this process runs\n"
      << env.output;
  EXPECT_TRUE(std::regex_search(forced.output, std::regex("CPU kernel level +portable \\(built: "))) << forced.output;
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_TRUE(contains(same.output, "OPENBLAS_CORETYPE")) << same.output;
  EXPECT_FALSE(contains(same.output, "step ")) << "--env trained:\n" << same.output;
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_TRUE(contains(info.output, "environment    where the run that saved it ran:")) << info.output;
  EXPECT_TRUE(contains(info.output, "HDF5")) << info.output;
}

TEST_F(ToolInput, InferenceToolsCheckWhatTheyAreAsked) {
  const std::string eval = program("tessera_eval") + " " + run_.string();
  const std::string generate = program("tessera_generate") + " " + run_.string() + " --length 2";
  // A prompt beyond the context: the model sees its end, and says so (run beside the refusals).
  const std::string long_prompt_command = generate + " --prompt " + std::string(40, 'x');
  std::vector<Refusal> refusals = {
      {generate + " --temperature nan", "--temperature nan: must be a finite number >= 0"},
      {generate + " --temperature inf", "--temperature inf: must be a finite number >= 0"},
      {eval + " --data " + data_ + " --seq-len 100", "--seq-len: 100 positions, longer than the model's context of 16"},
      {eval + " --data " + data_ + " --micro-batch 100000000", "--micro-batch 100000000: a forward of"},
      {eval + " --print-logits --tokens 1,,2", "--tokens item 2 (a token id of the model) = '': not an integer"},
      {eval + " --print-logits --tokens 99999999999999999999",
       "--tokens item 1 (a token id of the model) = "
       "'99999999999999999999': out of range"},
      {eval + " --print-logits --tokens 1" +
           [] {
             std::string more;
             for (int i = 1; i < 20; ++i) more += ",1";
             return more;
           }(),
       "--tokens: 20 positions, longer than the model's context of 16"},
  };
  std::vector<std::string> commands;
  for (const Refusal& r : refusals) commands.push_back(r.command);
  commands.push_back(long_prompt_command);
  const std::vector<ChildResult> results = run_child_jobs(commands, kToolLimit);
  for (std::size_t i = 0; i < refusals.size(); ++i) expect_refused(refusals[i], results[i]);
  const ChildResult& long_prompt = results.back();
  EXPECT_EQ(long_prompt.exit_code, 0) << long_prompt.output;
  EXPECT_TRUE(contains(long_prompt.output, "--prompt: 40 tokens, longer than the model's context of 16"))
      << long_prompt.output;
}

TEST_F(ToolInput, DataOfAnotherTokenizerIsRefused) {
  const std::string other = (*scratch_ / "bpe.bin").string();
  TokenizerSpec bpe{TokenizerKind::kBpe, "", 300, 0x1234};
  write_token_file(other, random_tokens(20000, 40), TokenFileFormat::kLlmc, bpe);
  const fs::path run = copy_of_run("run_other_tokenizer");
  run_refused_all({
      {program("tessera_eval") + " " + run.string() + " --data " + other,
       other + ": its tokens are another tokenizer's than the model's: bytes with 257 tokens vs bpe with 300 tokens"},
      {tiny(other, 4) + " --checkpoint-dir " + run.string() + " --resume auto",
       "was trained on another tokenizer's tokens than this run's data: bytes with 257 tokens vs bpe with 300 "
       "tokens"},
  });
}

TEST_F(ToolInput, NumbersParseStrictly) {
  const ChildResult plan = run_child_job(program("tessera_plan") + " --params 1e30", kToolLimit);
  expect_refused({program("tessera_plan") + " --params 1e30", "--params: '1e30' is too large"}, plan);
  // A stray directory named like a checkpoint is skipped with a warning, never a stoll message.
  const fs::path run = copy_of_run("run_stray_step");
  fs::create_directories(run / "step_99999999999999999999");
  const ChildResult info = run_child_job(program("tessera_ckpt") + " info " + run.string(), kToolLimit);
  EXPECT_EQ(info.exit_code, 0) << info.output;
  const ChildResult resumed =
      run_child_job(tiny(data_, 3) + " --checkpoint-dir " + run.string() + " --resume auto --keep-last 2", kToolLimit);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "step_99999999999999999999: not a checkpoint")) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "at step 2")) << resumed.output;
}

// A refused command's result and how long it took.
struct TimedResult {
  ChildResult result;
  std::chrono::steady_clock::duration took;
};

TEST_F(ToolInput, ConfigInputIsBounded) {
  const std::string huge = (*scratch_ / "huge.ini").string(), nul = (*scratch_ / "nul.ini").string();
  const std::string long_line = (*scratch_ / "long.ini").string();
  std::ofstream(huge) << std::string(10 << 20, 'k') << " = 1\n";
  std::ofstream(nul, std::ios::binary) << std::string("lr = 0.1\0x\n", 11);
  std::ofstream(long_line) << std::string(100000, 'k') << " = 1\n";
  const std::vector<Refusal> refusals = {
      {tiny(data_, 1) + " --config /dev/zero", "--config /dev/zero: larger than 1 MiB"},
      {tiny(data_, 1) + " --config " + huge, "--config " + huge + ": larger than 1 MiB"},
      {tiny(data_, 1) + " --config " + nul, nul + ":1: a NUL byte in 'lr = 0.1\\x00x'"},
      {tiny(data_, 1) + " --config " + long_line, long_line + ":1: a line of 100004 characters (at most 4096)"},
  };
  std::vector<std::function<TimedResult()>> tasks;
  for (const Refusal& r : refusals) {
    tasks.push_back([&r] {
      const auto start = std::chrono::steady_clock::now();
      ChildResult result = run_child_job(r.command, kToolLimit);
      return TimedResult{std::move(result), std::chrono::steady_clock::now() - start};
    });
  }
  const std::vector<TimedResult> results = all_at_once(tasks);
  for (std::size_t i = 0; i < 3; ++i) {  // the whole file's refusals: quick, and short
    expect_refused(refusals[i], results[i].result);
    EXPECT_LT(results[i].took, std::chrono::seconds(10)) << refusals[i].command;
    EXPECT_LT(results[i].result.output.size(), 4096u) << refusals[i].command << ": the message echoes the input";
  }
  expect_refused(refusals[3], results[3].result);
}

}  // namespace
}  // namespace tessera::testing
