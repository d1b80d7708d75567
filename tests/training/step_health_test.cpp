// StepHealth: from the first step on, a loss that is not finite or stands above the band judges the
// weights before the step unhealthy (a save made right before gets the mark) and the weights after
// it too; a skipped step leaves the weights unhealthy-after but healthy-before when its loss was
// fine; a step the spike guard skipped says what the weights were; during the guard's warm-up the
// band is at least 10% of the mean wide, after it 1%; unhealthy steps stay out of the band.
#include "tessera/training/step_health.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tessera/training/running_band.hpp"

namespace tessera {
namespace {

StepResult step(float loss, double norm = 1.0, bool skipped = false, bool spike = false) {
  StepResult r;
  r.loss = loss;
  r.grad_norm = norm;
  r.skipped = skipped;
  r.spike = spike;
  return r;
}

TEST(StepHealth, AnExplodingLossIsCaughtFromTheSecondStep) {
  StepHealth health({/*window*/ 100, /*warmup*/ 20, /*z*/ 6.0});
  EXPECT_TRUE(health.judge(step(6.2f)).state_after_healthy);
  const StepHealthVerdict exploded = health.judge(step(1.46e13f));
  EXPECT_FALSE(exploded.state_before_healthy);
  EXPECT_FALSE(exploded.state_after_healthy);
  EXPECT_NE(exploded.reason.find("the loss 1.46e+13 is"), std::string::npos) << exploded.reason;
  EXPECT_NE(exploded.reason.find("above the mean 6.2 of the last 1 healthy steps"), std::string::npos)
      << exploded.reason;
  // The exploded loss did not enter the band: a normal loss is healthy again.
  EXPECT_TRUE(health.judge(step(6.1f)).state_after_healthy);
}

TEST(StepHealth, WarmupBandIsTenPercentAfterItOnePercent) {
  StepHealth health({10, 3, 6.0});
  EXPECT_TRUE(health.judge(step(5.0f)).state_after_healthy);
  EXPECT_TRUE(health.judge(step(7.9f)).state_after_healthy) << "within 6 x 10% of the mean 5";
  StepHealth late({10, 3, 6.0});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(late.judge(step(5.0f)).state_after_healthy);
  EXPECT_FALSE(late.judge(step(5.31f)).state_after_healthy) << "beyond 6 x 1% of a flat curve after warm-up";
  EXPECT_TRUE(late.judge(step(5.29f)).state_after_healthy);
}

TEST(StepHealth, NonFiniteAndSkippedSteps) {
  StepHealth health({10, 3, 6.0});
  health.judge(step(5.0f));
  const StepHealthVerdict nan_loss = health.judge(step(NAN));
  EXPECT_FALSE(nan_loss.state_before_healthy);
  EXPECT_EQ(nan_loss.reason, "the loss is not finite");
  const StepHealthVerdict skipped = health.judge(step(5.0f, NAN, /*skipped=*/true));
  EXPECT_TRUE(skipped.state_before_healthy) << "the loss of the weights going in was fine";
  EXPECT_FALSE(skipped.state_after_healthy);
  EXPECT_EQ(skipped.reason, "the gradient norm is not finite");
  // A spike the guard skipped: the weights are what they were (here: after a skipped step).
  const StepHealthVerdict spike = health.judge(step(50.0f, 1.0, true, /*spike=*/true));
  EXPECT_TRUE(spike.state_before_healthy);
  EXPECT_FALSE(spike.state_after_healthy);
  EXPECT_TRUE(health.judge(step(5.0f)).state_after_healthy);
  EXPECT_TRUE(health.judge(step(50.0f, 1.0, true, true)).state_after_healthy);
}

TEST(RunningBand, DeviationsUseAFlooredSpread) {
  RunningBand band(3);
  EXPECT_EQ(band.deviations(10.0), 0.0) << "empty";
  band.accept(10.0);
  EXPECT_DOUBLE_EQ(band.deviations(10.5), 5.0) << "spread floored at 1% of 10";
  EXPECT_DOUBLE_EQ(band.deviations(15.0, 0.1), 5.0);
  for (double v : {1.0, 2.0, 3.0}) band.accept(v);  // 10 dropped
  EXPECT_DOUBLE_EQ(band.mean(), 2.0);
  EXPECT_NEAR(band.deviations(2.0 + std::sqrt(2.0 / 3.0)), 1.0, 1e-12);
}

}  // namespace
}  // namespace tessera
