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
  EXPECT_EQ(live_progress_line(figures()), "step 120/800  loss 2.3457  12345 tok/s  elapsed 1m02s  ETA 5m10s");
  ProgressFigures f = figures();
  f.eta_s.reset();
  f.skipped = true;
  EXPECT_EQ(live_progress_line(f), "step 120/800  loss 2.3457 (skipped)  12345 tok/s  elapsed 1m02s  ETA ?");
}

TEST(ProgressLine, LoggedStep) {
  EXPECT_EQ(logged_step_line(figures()),
            "step   120/800  loss 2.3457  lr 1.0e-03  gnorm 0.123  12345 tok/s  MFU 1.2%  ETA 5m10s");
}

TEST(ProgressLine, MfuOfRanksSharingCoresIsNotShown) {
  ProgressFigures f = figures();
  f.mfu = 2.61;  // what oversubscribed ranks measure against a ceiling each measured alone
  f.mfu_shared_cores = true;
  EXPECT_EQ(logged_step_line(f),
            "step   120/800  loss 2.3457  lr 1.0e-03  gnorm 0.123  12345 tok/s  MFU n/a  ETA 5m10s");
}

TEST(ProgressLine, LinesStayUnderOneHundredCharactersWithTheTimeInFront) {
  ProgressFigures f = figures();
  f.step = 123456789;
  f.total_steps = 1234567890;
  f.skipped = true;
  f.loss = -12345.678f;
  f.grad_norm = 1.5e12;
  f.tokens_per_s = 9.9e9;
  f.eta_s = 9.9e9;
  f.elapsed_s = 9.9e9;
  for (const std::string& line : {logged_step_line(f), live_progress_line(f), logged_step_line(figures())}) {
    EXPECT_LE(kTimeOfDayWidth + line.size(), kProgressLineWidth) << line;
    EXPECT_EQ(line.find("step "), 0u) << line;
    EXPECT_NE(line.find("loss "), std::string::npos) << "the loss is never left out: " << line;
  }
  EXPECT_EQ(logged_step_line(f).find("ETA "), std::string::npos) << "the least needed went first";
  EXPECT_NE(logged_step_line(f).find("lr "), std::string::npos) << logged_step_line(f);
}

}  // namespace
}  // namespace tessera
