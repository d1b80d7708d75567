// The lines training progress is shown in, from one step's figures:
//   live line (a terminal, rewritten in place every step):
//     step 120/800 | loss 2.3456 | 12345 tok/s | elapsed 1m02s | ETA 5m10s
//   logged step (every --log-every steps; a time stamp in front when stdout is not a terminal):
//     step   120/800 | loss 2.3456 | lr 1.00e-03 | grad norm 0.123 | 12345 tok/s | MFU 1.2% |
//     peak/rank 12.3 MiB | elapsed 1m02s | ETA 5m10s                                (one line)
// Formatting only: training/progress_display.hpp decides where the lines go.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tessera {

struct ProgressFigures {
  std::int64_t step = 0;         // steps completed
  std::int64_t total_steps = 0;  // the run's last step
  float loss = 0.0f;
  float lr = 0.0f;
  double grad_norm = 0.0;
  bool skipped = false;         // this step was skipped (non-finite gradients, a spike)
  double tokens_per_s = 0.0;    // all ranks
  double mfu = 0.0;             // model FLOP utilisation, a fraction (0.012 is 1.2%)
  double peak_mib = 0.0;        // the largest peak over the ranks
  double elapsed_s = 0.0;       // training time of the run so far
  std::optional<double> eta_s;  // time left; nullopt: not known yet
};

std::string live_progress_line(const ProgressFigures& figures);
std::string logged_step_line(const ProgressFigures& figures);

}  // namespace tessera
