// --gemm-math: auto (the default) is bf16 on the tensor cores with f32 accumulation, the explicit
// values are taken as written, anything else names the flag and every accepted value; the start-up
// line of a CPU run says nothing of GEMM arithmetic (the CPU computes in f32 whatever is asked).
#include "flags/device_flag.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tessera/runtime/device_factory.hpp"

namespace tessera {
namespace {

TEST(GemmMathFlag, AutoIsBf16AndTheDefault) {
  EXPECT_EQ(DeviceFlags{}.gemm_math, "auto");
  EXPECT_EQ(resolved_gemm_math(DeviceFlags{}), GemmMath::kBf16);
}

TEST(GemmMathFlag, ExplicitValuesAreKept) {
  EXPECT_EQ(resolved_gemm_math(DeviceFlags{.device = "cuda", .gemm_math = "f32"}), GemmMath::kF32);
  EXPECT_EQ(resolved_gemm_math(DeviceFlags{.device = "cuda", .gemm_math = "tf32"}), GemmMath::kTf32);
  EXPECT_EQ(resolved_gemm_math(DeviceFlags{.device = "cuda", .gemm_math = "bf16"}), GemmMath::kBf16);
}

TEST(GemmMathFlag, AnotherValueNamesTheFlagAndTheChoices) {
  try {
    resolved_gemm_math(DeviceFlags{.device = "cuda", .gemm_math = "fp8"});
    FAIL() << "fp8 was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    for (const char* word : {"--gemm-math fp8", "auto", "f32", "tf32", "bf16"}) {
      EXPECT_NE(message.find(word), std::string::npos) << word << " missing from: " << message;
    }
  }
}

TEST(GemmMathFlag, TheCpuLineLeavesGemmArithmeticOut) {
  const DeviceFlags flags{.device = "cpu", .gemm_math = "auto"};
  auto cpu = make_device(DeviceChoice::kCpu);
  EXPECT_EQ(device_line(flags, *cpu), "device: cpu");
}

}  // namespace
}  // namespace tessera
