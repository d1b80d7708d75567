// Support for the fault tests that run train_gpt as a process: find the binary (ctest sets
// TESSERA_BIN_DIR), run a command line with a time bound and capture its output and exit status,
// and write small token files with a chosen pattern.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/text/data/token_file.hpp"

namespace tessera::testing {

struct ProcessResult {
  int exit_code = -1;  // -1: killed by a signal or not started
  std::string output;  // stdout and stderr, interleaved
};

// Runs `command` through the shell under `timeout -s KILL <seconds>` (so a hung run fails the test
// instead of hanging it), stderr merged into stdout.
inline ProcessResult run_bounded(const std::string& command, int seconds = 120) {
  ProcessResult result;
  const std::string bounded = "timeout -s KILL " + std::to_string(seconds) + " " + command + " 2>&1";
  FILE* pipe = popen(bounded.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) result.output += buf.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The start of an mpirun command line (ranks oversubscribed) for a job that is expected to fail:
// after a process of the job exits non-zero, mpirun waits odls_base_sigkill_timeout (1 s) twice
// before it ends, even when no process is left to stop. The job's processes and what they print are
// the same; only that wait goes.
inline std::string mpirun_expecting_failure(int ranks) {
  return "mpirun --oversubscribe --mca odls_base_sigkill_timeout 0 -np " + std::to_string(ranks) + " ";
}

// The "loss" values of the train records of a --metrics file, as written (shortest round-trip
// text: equal text is equal bits).
inline std::vector<std::string> losses_of(const std::filesystem::path& metrics) {
  std::vector<std::string> losses;
  std::ifstream in(metrics);
  const std::regex train(R"re("kind":"train".*"loss":([-+0-9.eE]+))re");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, train)) losses.push_back(m[1]);
  }
  return losses;
}

// The train_gpt binary, or "" when ctest's TESSERA_BIN_DIR is not set.
inline std::string train_gpt_binary() {
  const char* bin = std::getenv("TESSERA_BIN_DIR");
  return bin == nullptr ? "" : std::string(bin) + "/train_gpt";
}

// `count` token ids drawn uniformly from [0, vocab_used) with `seed`.
inline std::vector<std::int32_t> random_tokens(std::int64_t count, std::uint64_t vocab_used, std::uint64_t seed = 3) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(count));
  Rng rng(seed);
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng.below(vocab_used));
  return tokens;
}

// A tiny model's flags over `data` (T 16), quiet and fast: one log line per step.
inline std::string tiny_run(const std::string& data, int vocab = 64) {
  return " --data " + data + " --layers 2 --dim 32 --heads 2 --seq-len 16 --vocab " + std::to_string(vocab) +
         " --sample-tokens 0 "
         "--eval-every 0 --log-every 1 --threads 1 --no-memory-check";
}

// `flags` with the value of `flag` (which it holds, as "--flag value") replaced by `value`, e.g.
// set_flag(tiny_run(data), "--log-every", "20"); `value` may hold further flags.
inline std::string set_flag(std::string flags, const std::string& flag, const std::string& value) {
  const std::size_t at = flags.find(flag + " ");
  if (at == std::string::npos) throw std::invalid_argument("set_flag: " + flag + " is not in '" + flags + "'");
  const std::size_t begin = at + flag.size() + 1;
  const std::size_t end = flags.find(' ', begin);
  return flags.replace(begin, (end == std::string::npos ? flags.size() : end) - begin, value);
}

}  // namespace tessera::testing
