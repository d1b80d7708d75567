// The lines a training run prints when it stops early or resumes differently, naming settings as
// the program spells them (SettingNames: "checkpoint.dir" for an embedding program, "--checkpoint-dir"
// for train_gpt):
//   stop_signal_line      a stop signal (SIGTERM/SIGUSR1/SIGINT, on any rank) ended the run after `step`
//                         steps: where that step was saved, or that nothing was saved
//   diverged_message      the run gave up after a streak of skipped steps, and what to change
//   seed_change_warning   a resume with a data-order seed other than the checkpoint's
#pragma once

#include <cstdint>
#include <string>

#include "tessera/core/setting_error.hpp"

namespace tessera {

// `checkpoint_dir`: "" when the run saves nothing; `steps`: the run's length, to say when the signal
// came after the last step (during the last validation or the program's own work after the loop).
std::string stop_signal_line(const std::string& checkpoint_dir, std::int64_t step, std::int64_t steps,
                             const SettingNames& names);

// What diverged_message says: where the run stopped and what it had tried.
struct Divergence {
  std::string program;           // the message's prefix ("train_gpt")
  std::int64_t step = 0;         // steps completed when the run stopped
  std::int64_t consecutive = 0;  // skipped in a row
  std::int64_t total = 0;        // skipped in this run
  std::int64_t limit = 0;        // run.max_skipped_steps
  int reloads = 0;               // times the run went back to its latest healthy checkpoint
  bool spike_guard = false;      // run.spike_guard
  std::string checkpoint_dir;    // "" when the run saves nothing
  double lr = 0.0;               // schedule.lr
  double grad_clip = 0.0;        // sharding.grad_clip
};

// "train_gpt: stopping at step 7: the last 6 steps were all skipped (--max-skipped-steps 6; 6 skipped
// in this run); the training has diverged; ...\nTry a lower --lr (now 0.001), ...\n"
std::string diverged_message(const Divergence& d, const SettingNames& names);

// "--seed 7 differs from the seed 1337 of the checkpoint being resumed. ... Pass --seed 1337 to
// continue the run exactly."
std::string seed_change_warning(std::uint64_t seed, std::uint64_t checkpoint_seed, const SettingNames& names);

}  // namespace tessera
