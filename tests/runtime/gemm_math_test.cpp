// GemmMath names: every value prints and parses back; anything else is refused with a message that
// names the setting, the value and the accepted spellings. (Runs without a GPU.)
#include "tessera/runtime/gemm_math.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tessera {
namespace {

TEST(GemmMath, NamesRoundTrip) {
  for (GemmMath math : {GemmMath::kF32, GemmMath::kTf32, GemmMath::kBf16}) {
    EXPECT_EQ(parse_gemm_math(gemm_math_name(math)), math) << gemm_math_name(math);
  }
  EXPECT_STREQ(gemm_math_name(GemmMath::kF32), "f32");
  EXPECT_STREQ(gemm_math_name(GemmMath::kTf32), "tf32");
  EXPECT_STREQ(gemm_math_name(GemmMath::kBf16), "bf16");
}

TEST(GemmMath, UnknownSpellingNamesTheSettingAndTheChoices) {
  try {
    parse_gemm_math("fp8", "--gemm-math");
    FAIL() << "parse_gemm_math(\"fp8\") did not throw";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--gemm-math"), std::string::npos) << message;
    EXPECT_NE(message.find("fp8"), std::string::npos) << message;
    EXPECT_NE(message.find("f32, tf32 or bf16"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tessera
