// An allocation no machine can satisfy fails with OutOfMemoryError (still a std::bad_alloc) that
// names the device, what was being allocated (the memory category), the size and what is already
// in use — and train_gpt with an absurd micro-batch (memory check off) exits with that message
// rather than a bare std::bad_alloc.
#include "tessera/runtime/out_of_memory.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tessera/runtime/cpu/cpu_device.hpp"
#include "tessera/runtime/storage.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

TEST(OutOfMemory, AFailedAllocationNamesWhatAndHowMuch) {
  CpuDevice device;
  const std::size_t petabyte = std::size_t{1} << 50;
  try {
    Storage::allocate(device, petabyte, MemoryCategory::kActivations, MemoryKind::kDevice);
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const OutOfMemoryError& e) {
    const std::string text = e.what();
    for (const std::string& part : {std::string("cpu"), std::string("1125899906842624 bytes"),
                                    std::string("for activations"), std::string("already allocated")}) {
      EXPECT_NE(text.find(part), std::string::npos) << "missing '" << part << "' in: " << text;
    }
  }
  EXPECT_THROW(Storage::allocate(device, petabyte, MemoryCategory::kWorkspace, MemoryKind::kDevice), std::bad_alloc);
  EXPECT_EQ(device.memory().current_total(), 0) << "a failed allocation must not be booked";
}

TEST(OutOfMemory, TrainGptWithAnAbsurdMicroBatchSaysWhatItCouldNotAllocate) {
  const std::string train_gpt = testing::train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  testing::ScratchDir dir("out_of_memory");
  const std::string data = (dir / "tokens.bin").string();
  write_token_file(data, testing::random_tokens(5000, 40));
  const auto r =
      testing::run_bounded(train_gpt + testing::tiny_run(data) + " --steps 1 --micro-batch 4000000000000", 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("out of "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory allocating"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("std::bad_alloc"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tessera
