// The training loop's messages name settings as the program spells them: the library's own names
// by default ("checkpoint.dir"), a program's flags when it passes its SettingNames.
#include "tessera/run/run_messages.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

const SettingNames kFlags{{"checkpoint.dir", "--checkpoint-dir"},
                          {"checkpoint.save_every", "--save-every"},
                          {"run.max_skipped_steps", "--max-skipped-steps"},
                          {"run.spike_guard", "--spike-guard"},
                          {"run.seed", "--seed"},
                          {"schedule.lr", "--lr"},
                          {"schedule.warmup", "--warmup"},
                          {"sharding.grad_clip", "--grad-clip"},
                          {"precision.param_dtype", "--param-dtype"},
                          {"precision.reduce_dtype", "--reduce-dtype"}};

TEST(RunMessages, StopLineSaysWhereTheStepWentOrThatNothingWasSaved) {
  EXPECT_EQ(stop_signal_line("run", 7, 100, {}), "stop signal: saved step 7 to run, stopping");
  EXPECT_EQ(stop_signal_line("run", 100, 100, {}),
            "stop signal (after the last step): saved step 100 to run, stopping");
  EXPECT_EQ(stop_signal_line("", 7, 100, {}),
            "stop signal: stopping after step 7; nothing was saved (no checkpoint.dir)");
  EXPECT_EQ(stop_signal_line("", 7, 100, kFlags),
            "stop signal: stopping after step 7; nothing was saved (no --checkpoint-dir)");
}

TEST(RunMessages, DivergenceNamesTheLimitWhatWasTriedAndWhatToChange) {
  Divergence d;
  d.program = "train_gpt";
  d.step = 33;
  d.consecutive = 3;
  d.total = 5;
  d.limit = 3;
  d.spike_guard = true;
  d.lr = 0.001;
  d.grad_clip = 1.0;
  const std::string flags = diverged_message(d, kFlags);
  for (const char* part :
       {"train_gpt: stopping at step 33: the last 3 steps were all skipped (--max-skipped-steps 3; "
        "5 skipped in this run); the training has diverged; there is no --checkpoint-dir to go back to.",
        "Try a lower --lr (now 0.001), a gradient clip (--grad-clip, now 1), a longer --warmup",
        "--param-dtype/--reduce-dtype", "or --spike-guard with --save-every"}) {
    EXPECT_NE(flags.find(part), std::string::npos) << "missing '" << part << "' in:\n" << flags;
  }
  const std::string settings = diverged_message(d, {});
  EXPECT_NE(settings.find("(run.max_skipped_steps 3;"), std::string::npos) << settings;
  EXPECT_NE(settings.find("Try a lower schedule.lr (now 0.001)"), std::string::npos) << settings;

  d.checkpoint_dir = "run";
  EXPECT_NE(diverged_message(d, kFlags).find("; run holds no checkpoint to go back to yet."), std::string::npos);
  d.reloads = 2;
  EXPECT_NE(diverged_message(d, kFlags).find("diverged again after 2 reload(s) of the latest checkpoint."),
            std::string::npos);
}

TEST(RunMessages, SeedWarningSaysHowToContinueExactly) {
  const std::string text = seed_change_warning(7, 1337, kFlags);
  EXPECT_EQ(text.rfind("--seed 7 differs from the seed 1337 of the checkpoint being resumed.", 0), 0u) << text;
  EXPECT_NE(text.find("Pass --seed 1337 to continue the run exactly."), std::string::npos) << text;
  EXPECT_NE(seed_change_warning(7, 1337, {}).find("Pass run.seed 1337"), std::string::npos);
}

}  // namespace
}  // namespace tessera
