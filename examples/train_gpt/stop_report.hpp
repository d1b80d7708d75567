// stop_signal_line: what train_gpt's rank 0 logs when a stop signal (SIGTERM/SIGUSR1, on any rank)
// ended the run after `step` steps: where that step was saved, or that nothing was saved because
// there is no --checkpoint-dir. `steps`: the run's --steps, to say when the signal came after the
// last step (during the last validation or the sample).
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

std::string stop_signal_line(const std::string& checkpoint_dir, std::int64_t step, std::int64_t steps);

}  // namespace tessera
