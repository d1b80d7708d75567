// The lines a training run prints when it stops early or resumes with another seed.
#include "tessera/run/run_messages.hpp"

#include <cstdio>

namespace tessera {

std::string stop_signal_line(const std::string& checkpoint_dir, std::int64_t step, std::int64_t steps,
                             const SettingNames& names) {
  const std::string when = step >= steps ? " (after the last step)" : "";
  if (checkpoint_dir.empty()) {
    return "stop signal" + when + ": stopping after step " + std::to_string(step) + "; nothing was saved (no " +
           names.flag_of("checkpoint.dir") + ")";
  }
  return "stop signal" + when + ": saved step " + std::to_string(step) + " to " + checkpoint_dir + ", stopping";
}

std::string diverged_message(const Divergence& d, const SettingNames& names) {
  std::string text = d.program + ": stopping at step " + std::to_string(d.step) + ": the last " +
                     std::to_string(d.consecutive) + " steps were all skipped (" +
                     names.flag_of("run.max_skipped_steps") + " " + std::to_string(d.limit) + "; " +
                     std::to_string(d.total) + " skipped in this run); the training has diverged";
  if (d.reloads > 0) {
    text += " again after " + std::to_string(d.reloads) + " reload(s) of the latest checkpoint";
  } else if (d.spike_guard) {
    text += d.checkpoint_dir.empty() ? "; there is no " + names.flag_of("checkpoint.dir") + " to go back to"
                                     : "; " + d.checkpoint_dir + " holds no checkpoint to go back to yet";
  }
  char lr[32], clip[32];
  std::snprintf(lr, sizeof lr, "%g", d.lr);
  std::snprintf(clip, sizeof clip, "%g", d.grad_clip);
  text += ".\nTry a lower " + names.flag_of("schedule.lr") + " (now " + lr + "), a gradient clip (" +
          names.flag_of("sharding.grad_clip") + ", now " + clip + "), a longer " + names.flag_of("schedule.warmup") +
          ", f32 instead of bf16/f16 " + names.flag_of("precision.param_dtype") + "/" +
          names.flag_of("precision.reduce_dtype") + ", or " + names.flag_of("run.spike_guard") + " with " +
          names.flag_of("checkpoint.save_every") + " so the run can go back to a checkpoint.\n";
  return text;
}

std::string seed_change_warning(std::uint64_t seed, std::uint64_t checkpoint_seed, const SettingNames& names) {
  const std::string flag = names.flag_of("run.seed");
  return flag + " " + std::to_string(seed) + " differs from the seed " + std::to_string(checkpoint_seed) +
         " of the checkpoint being resumed. The weights and optimizer state come from the checkpoint either way; "
         "the seed still picks the data order from here on (this epoch's windows may be read twice or not at all) "
         "and whatever else the program draws from it. Pass " +
         flag + " " + std::to_string(checkpoint_seed) + " to continue the run exactly.";
}

}  // namespace tessera
