// DynamicLossScaler: hysteresis before backoff, growth after the interval, floor at min_scale.
#include "tessera/precision/loss_scaler.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(DynamicLossScaler, BacksOffAfterHysteresisAndGrowsAfterInterval) {
  LossScalerConfig c;
  c.initial_scale = 1024.0f;
  c.growth_interval = 3;
  c.hysteresis = 2;
  DynamicLossScaler s(c);
  EXPECT_EQ(s.scale(), 1024.0f);
  s.update(true);  // first overflow: tolerated
  EXPECT_EQ(s.scale(), 1024.0f);
  s.update(true);  // second in a row: back off
  EXPECT_EQ(s.scale(), 512.0f);
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 512.0f);
  s.update(false);  // third clean step: grow
  EXPECT_EQ(s.scale(), 1024.0f);
  s.update(true);
  s.update(false);  // a clean step resets the hysteresis
  s.update(true);
  EXPECT_EQ(s.scale(), 1024.0f);
}

TEST(DynamicLossScaler, NeverDropsBelowTheMinimumAndRestoresState) {
  LossScalerConfig c;
  c.initial_scale = 4.0f;
  c.hysteresis = 1;
  c.min_scale = 1.0f;
  DynamicLossScaler s(c);
  for (int i = 0; i < 10; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 1.0f);
  DynamicLossScaler t(c);
  t.set_state(s.state());
  EXPECT_EQ(t.scale(), 1.0f);
}

}  // namespace
}  // namespace tessera
