// What the engine refuses before it allocates anything: a communicator whose memory space is not
// the device's, settings no engine can run with (named in the library's terms), and parameters
// that already have storage.
#include <gtest/gtest.h>

#include "tessera/comm/loopback/loopback_communicator.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/meta/meta_device.hpp"
#include "tessera/sharding/sharded_engine.hpp"

namespace tessera {
namespace {

GptConfig small() { return {/*vocab*/ 16, /*seq*/ 4, /*layers*/ 1, /*heads*/ 2, /*dim*/ 8}; }

TEST(ShardedEngineChecks, CommunicatorMustWorkOnTheDevicesMemory) {
  auto device = make_cpu_device();
  LoopbackCommunicator world(0, 2);  // meta memory
  Gpt model(small());
  try {
    ShardedEngine engine(model, *device, world, ShardingConfig{}, 1);
    FAIL() << "a meta communicator was accepted with the CPU device";
  } catch (const std::invalid_argument& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("loopback"), std::string::npos) << text;
    EXPECT_NE(text.find("meta memory"), std::string::npos) << text;
    EXPECT_NE(text.find("host memory"), std::string::npos) << text;
  }
  // The meta device and the loopback communicator belong together.
  auto meta = make_meta_device();
  Gpt planned(small());
  EXPECT_NO_THROW(ShardedEngine(planned, *meta, world, ShardingConfig{}, 1));
}

TEST(ShardedEngineChecks, SettingsAreNamedInTheLibrarysTerms) {
  auto meta = make_meta_device();
  LoopbackCommunicator world(0, 4);
  auto expect_setting = [&](ShardingConfig config, const std::string& setting) {
    Gpt model(small());
    try {
      ShardedEngine engine(model, *meta, world, config, 1);
      ADD_FAILURE() << setting << ": accepted";
    } catch (const SettingError& e) {
      EXPECT_EQ(e.setting(), setting) << e.what();
    }
  };
  ShardingConfig c;
  c.prefetch_units = -1;
  expect_setting(c, "sharding.prefetch_units");
  c = {};
  c.max_reduces_in_flight = 0;
  expect_setting(c, "sharding.max_reduces_in_flight");
  c = {};
  c.precision.reduce_dtype = DType::kI32;
  expect_setting(c, "precision.reduce_dtype");
  c = {};
  c.stage = ZeroStage::kStage1;
  c.offload.parameters = OffloadTarget::kCpu;
  expect_setting(c, "sharding.offload.parameters");
  EXPECT_THROW(parse_zero_stage(4), SettingError);
}

TEST(ShardedEngineChecks, MaterialisedParametersAreRefused) {
  LoopbackCommunicator world(0, 1);
  auto meta = make_meta_device();
  Gpt model(small());
  materialize_parameters(model, *meta, 1);
  EXPECT_THROW(ShardedEngine(model, *meta, world, ShardingConfig{}, 1), std::invalid_argument);
}

}  // namespace
}  // namespace tessera
