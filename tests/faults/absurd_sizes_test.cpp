// Model sizes whose parameter or byte counts would overflow int64 are refused with the setting and
// what to change, in the library (GptConfig::validate, checked 128-bit arithmetic) and in
// tessera_plan (which would otherwise overflow or spend hours building a million layers); the
// largest real models pass.
#include <gtest/gtest.h>

#include <string>

#include "tessera/core/setting_error.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

GptConfig gpt(std::int64_t layers, std::int64_t channels, std::int64_t heads = 1) {
  GptConfig c;
  c.layers = layers;
  c.channels = channels;
  c.heads = heads;
  c.vocab_size = 50304;
  c.max_seq_len = 2048;
  return c;
}

TEST(AbsurdSizes, OverflowingModelsAreRefusedAndRealOnesPass) {
  EXPECT_NO_THROW(gpt(96, 12288, 96).validate()) << "GPT-3 175B";
  EXPECT_NO_THROW(gpt(1000000, 64).validate()) << "5e10 parameters fit";
  for (const GptConfig& c :
       {gpt(1000000, 1000000), gpt(100, 4000000000), gpt(2, std::int64_t{1} << 40), gpt(std::int64_t{1} << 62, 1024)}) {
    try {
      c.validate();
      ADD_FAILURE() << c.to_string() << " passed";
    } catch (const SettingError& e) {
      EXPECT_EQ(e.setting(), "model.layers") << e.what();
      EXPECT_NE(std::string(e.what()).find("choose fewer layers or channels"), std::string::npos) << e.what();
    }
  }
}

TEST(AbsurdSizes, TesseraPlanSaysTheModelIsTooLarge) {
  const std::string train_gpt = testing::train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  const std::string plan = train_gpt.substr(0, train_gpt.size() - 9) + "tessera_plan";
  const auto r = testing::run_bounded(plan + " --layers 1000000 --dim 1000000 --heads 1", 60);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--layers 1000000: with 1000000 channels the model has more than"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("too large"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tessera
