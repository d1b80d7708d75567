// The lines training progress is shown in, from one step's figures, fields two spaces apart:
//   live line (a terminal, rewritten in place every step):
//     step 120/800  loss 2.3456  12345 tok/s  elapsed 1m02s  ETA 5m10s
//   logged step (every --log-every steps; a time of day in front when stdout is not a terminal):
//     step   120/800  loss 2.3456  lr 1.0e-03  gnorm 0.123  12345 tok/s  MFU 1.2%  ETA 5m10s
// Either stays under kProgressLineWidth characters with the time in front: a field that would
// pass it is left out, the least needed first (elapsed, ETA, MFU, tok/s, gnorm, lr). MFU shows as
// "MFU n/a" when the ranks on a node and their threads are more than its cores (mfu_shared_cores):
// the GEMM ceiling was measured alone, so the fraction would read too high (over 100%).
// The peak memory per rank is in the metrics file and in the summary at the end of the run.
// Formatting only: training/progress_display.hpp decides where the lines go.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "tessera/core/wrapped_line.hpp"

namespace tessera {

// The widest a progress line is, its time of day ("12:34:56 ") included: the width of every line
// the programs print (core/wrapped_line.hpp).
constexpr std::size_t kProgressLineWidth = kConsoleLineWidth;
// What a plain (non-terminal) line has in front: "12:34:56 ".
constexpr std::size_t kTimeOfDayWidth = 9;

struct ProgressFigures {
  std::int64_t step = 0;         // steps completed
  std::int64_t total_steps = 0;  // the run's last step
  float loss = 0.0f;
  float lr = 0.0f;
  double grad_norm = 0.0;
  bool skipped = false;            // this step was skipped (non-finite gradients, a spike)
  double tokens_per_s = 0.0;       // all ranks
  double mfu = 0.0;                // model FLOP utilisation, a fraction (0.012 is 1.2%)
  bool mfu_shared_cores = false;   // ranks x threads exceed the node's cores: MFU is shown as n/a
  double peak_mib = 0.0;           // the largest peak over the ranks (metrics file)
  double elapsed_s = 0.0;          // training time of the run so far
  std::optional<double> eta_s;     // time left; nullopt: not known yet
};

std::string live_progress_line(const ProgressFigures& figures);
std::string logged_step_line(const ProgressFigures& figures);

}  // namespace tessera
