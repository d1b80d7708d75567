// SettingError names the setting, the value and the problem; SettingNames rewords it with a
// program's flag; reword_setting_errors does that for whatever escapes a program's body.
#include "tessera/core/setting_error.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(SettingError, NamesSettingValueAndProblem) {
  const SettingError e("sharding.prefetch_units", "-1", "must be >= 0");
  EXPECT_STREQ(e.what(), "sharding.prefetch_units = -1: must be >= 0");
  EXPECT_EQ(e.setting(), "sharding.prefetch_units");
  const SettingNames names{{"sharding.prefetch_units", "--prefetch"}};
  EXPECT_EQ(names.explain(e), "--prefetch -1: must be >= 0");
  EXPECT_EQ(names.flag_of("sharding.stage"), "sharding.stage") << "unknown settings keep their own name";
  EXPECT_EQ(SettingNames{}.explain(e), e.what());
}

TEST(SettingError, RewordedForTheProgram) {
  const SettingNames names{{"sharding.stage", "--zero"}};
  EXPECT_EQ(reword_setting_errors(names, [] { return 3; }), 3);
  try {
    reword_setting_errors(names, []() -> int { throw SettingError("sharding.stage", "5", "must be 0, 1, 2 or 3"); });
    FAIL() << "nothing was thrown";
  } catch (const SettingError&) {
    FAIL() << "the error left the program in the library's words";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--zero 5: must be 0, 1, 2 or 3");
  }
}

TEST(SettingError, OtherSettingsInTheProblemAreSpelledAsFlags) {
  const SettingNames names{{"checkpoint.dir", "--checkpoint-dir"},
                           {"checkpoint.resume", "--resume"},
                           {"checkpoint.resume_from", "--resume-from"}};
  const SettingError e("checkpoint.dir", "ckpt",
                       "holds checkpoints; use checkpoint.resume auto or checkpoint.resume_from");
  EXPECT_EQ(names.explain(e), "--checkpoint-dir ckpt: holds checkpoints; use --resume auto or --resume-from");
}

}  // namespace
}  // namespace tessera
