// The ETA is the mean step time of the last `window` steps times the steps left: exact for steady
// steps, following a change of pace within one window, and moving back with the steps after a
// reload.
#include "tessera/training/eta.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(Eta, UnknownBeforeTheFirstStep) {
  const EtaEstimator eta(100);
  EXPECT_FALSE(eta.seconds_left().has_value());
  EXPECT_FALSE(eta.seconds_per_step().has_value());
}

TEST(Eta, SteadyStepsGiveStepsLeftTimesTheStepTime) {
  EtaEstimator eta(100, 10);
  for (int s = 1; s <= 40; ++s) eta.record(s, 0.5);
  EXPECT_DOUBLE_EQ(*eta.seconds_per_step(), 0.5);
  EXPECT_DOUBLE_EQ(*eta.seconds_left(), 60 * 0.5);
  eta.record(100, 0.5);
  EXPECT_DOUBLE_EQ(*eta.seconds_left(), 0.0);
}

TEST(Eta, FollowsAChangeOfPaceWithinTheWindow) {
  EtaEstimator eta(1000, 4);
  eta.record(1, 10.0);  // a slow first step (warm-up)
  for (int s = 2; s <= 5; ++s) eta.record(s, 1.0);
  EXPECT_DOUBLE_EQ(*eta.seconds_per_step(), 1.0) << "the slow first step left the window of 4";
  EXPECT_DOUBLE_EQ(*eta.seconds_left(), 995.0);
}

TEST(Eta, StepsMayGoBack) {
  EtaEstimator eta(50, 2);
  eta.record(40, 1.0);
  eta.record(30, 1.0);  // the run went back to the checkpoint of step 30
  EXPECT_DOUBLE_EQ(*eta.seconds_left(), 20.0);
}

}  // namespace
}  // namespace tessera
