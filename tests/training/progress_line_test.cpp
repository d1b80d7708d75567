// The live line and the logged step's line from the same figures: every figure where it belongs.
#include "tessera/training/progress_line.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

ProgressFigures figures() {
  ProgressFigures f;
  f.step = 120;
  f.total_steps = 800;
  f.loss = 2.34567f;
  f.lr = 1e-3f;
  f.grad_norm = 0.1234;
  f.tokens_per_s = 12345.4;
  f.mfu = 0.0123;
  f.peak_mib = 12.34;
  f.elapsed_s = 62.0;
  f.eta_s = 310.0;
  return f;
}

TEST(ProgressLine, LiveLine) {
  EXPECT_EQ(live_progress_line(figures()), "step 120/800 | loss 2.3457 | 12345 tok/s | elapsed 1m02s | ETA 5m10s");
  ProgressFigures f = figures();
  f.eta_s.reset();
  f.skipped = true;
  EXPECT_EQ(live_progress_line(f), "step 120/800 | loss 2.3457 (skipped) | 12345 tok/s | elapsed 1m02s | ETA ?");
}

TEST(ProgressLine, LoggedStep) {
  EXPECT_EQ(logged_step_line(figures()),
            "step   120/800 | loss 2.3457 | lr 1.00e-03 | grad norm 0.123 |   12345 tok/s | MFU  1.2% | "
            "peak/rank 12.3 MiB | elapsed 1m02s | ETA 5m10s");
}

}  // namespace
}  // namespace tessera
