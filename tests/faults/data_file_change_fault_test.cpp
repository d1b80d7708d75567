// train_gpt while its data file is replaced (tessera_prepare re-run into the same path: a new file
// renamed over it) or truncated in place: the run stops at its next batch with a non-zero exit and a
// message naming the file and what changed, instead of training on other samples (or dying of SIGBUS
// on a truncated mapping). The file is changed once the run's log shows step 3; every wait is bounded.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::run_bounded;
using testing::ScratchDir;
using testing::train_gpt_binary;

// Runs train_gpt on `data` in the background, runs `change` once its log shows step 3, and returns
// its exit status and log ("exit N" on the last line).
testing::ProcessResult run_and_change(const std::string& train_gpt, const ScratchDir& dir, const std::string& data,
                                      const std::string& change) {
  const std::string log = (dir / "run.log").string();
  const std::string script =
      train_gpt + " --data " + data +
      " --layers 1 --dim 32 --heads 2 --seq-len 16 --vocab 64 --steps 1000000 --allow-no-checkpoint-dir" +
      " --log-every 1 --eval-every 0 --sample-tokens 0 --threads 1 --progress plain > " + log + " 2>&1 & pid=$!; " +
      "for i in $(seq 600); do grep -q \"step     3\" " + log + " && break; kill -0 $pid 2>/dev/null || break; " +
      "sleep 0.1; done; " + change + "; wait $pid; code=$?; cat " + log + "; echo exit $code";
  return run_bounded("sh -c '" + script + "'", 120);
}

void expect_stopped(const testing::ProcessResult& r, const std::string& data, const std::string& change) {
  EXPECT_NE(r.output.find("step     3"), std::string::npos) << "the run never trained:\n" << r.output;
  EXPECT_NE(r.output.find("exit 1"), std::string::npos) << "not stopped with exit 1:\n" << r.output;
  for (const std::string& part : {data + ": the data file changed while the run was reading it", change}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << r.output;
  }
  EXPECT_EQ(r.output.find("step 1000000/1000000"), std::string::npos) << r.output;
}

TEST(DataFileChangeFault, AReplacedDataFileStopsTheRunNamingIt) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  ScratchDir dir("data_replaced");
  const std::string data = (dir / "tokens.bin").string(), other = (dir / "other.bin").string();
  write_token_file(data, random_tokens(20000, 60));
  write_token_file(other, random_tokens(20000, 60, /*seed=*/9));
  expect_stopped(run_and_change(train_gpt, dir, data, "mv " + other + " " + data), data,
                 "it was replaced by another file");
}

TEST(DataFileChangeFault, ATruncatedDataFileStopsTheRunNamingIt) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  ScratchDir dir("data_truncated");
  const std::string data = (dir / "tokens.bin").string();
  write_token_file(data, random_tokens(20000, 60));
  expect_stopped(run_and_change(train_gpt, dir, data, "truncate -s 4096 " + data), data,
                 "its size changed from 41024 to 4096 bytes");
}

}  // namespace
}  // namespace tessera
