// SpikeDetector: nothing is a spike during warm-up; a loss or a gradient norm far above the window's
// spread is, and says why; spikes stay out of the window (the next normal step is not one); a flat
// curve needs a 1% excursion at least; non-finite losses are spikes; bad settings are named.
#include "tessera/training/spike_detector.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tessera/core/setting_error.hpp"

namespace tessera {
namespace {

TEST(SpikeDetector, FlagsOutliersAfterWarmupAndKeepsThemOutOfTheWindow) {
  SpikeDetector fresh({/*window*/ 10, /*warmup*/ 5, /*z*/ 4.0});
  EXPECT_FALSE(fresh.is_spike(100.0, 1.0)) << "warm-up: nothing to compare with";
  SpikeDetector d({/*window*/ 10, /*warmup*/ 5, /*z*/ 4.0});
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(d.is_spike(2.0 + 0.01 * (i % 3), 1.0 + 0.01 * (i % 2)));
  EXPECT_TRUE(d.is_spike(9.0, 1.0));
  EXPECT_NE(d.last_reason().find("loss 9"), std::string::npos) << d.last_reason();
  EXPECT_TRUE(d.is_spike(2.0, 50.0));
  EXPECT_NE(d.last_reason().find("gradient norm 50"), std::string::npos) << d.last_reason();
  EXPECT_FALSE(d.is_spike(2.01, 1.0)) << "the spikes did not widen the window";
  EXPECT_EQ(d.spikes(), 2);
  EXPECT_TRUE(d.is_spike(NAN, 1.0));
}

TEST(SpikeDetector, AFlatCurveNeedsAOnePercentExcursion) {
  SpikeDetector d({10, 5, 3.0});
  for (int i = 0; i < 10; ++i) ASSERT_FALSE(d.is_spike(1.0, 1.0));
  EXPECT_FALSE(d.is_spike(1.02, 1.0)) << "2 spreads of 1% with z 3";
  EXPECT_TRUE(d.is_spike(1.04, 1.0)) << "4 spreads of 1%";
}

TEST(SpikeDetector, SettingsAreChecked) {
  EXPECT_THROW(SpikeDetector({1, 1, 6.0}), SettingError);
  EXPECT_THROW(SpikeDetector({10, 20, 6.0}), SettingError);
  EXPECT_THROW(SpikeDetector({10, 5, 0.0}), SettingError);
}

}  // namespace
}  // namespace tessera
