// The Placement table: what ZeRO stages 0-3 store where, for f32 and bf16 parameters and with
// optimizer and parameter offload — the rows docs/ARCHITECTURE.md shows, read as data.
#include "tessera/sharding/placement.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tessera {
namespace {

MixedPrecision params(DType d) {
  MixedPrecision p;
  p.param_dtype = d;
  return p;
}

TEST(Placement, ZeroTableRowByRow) {
  struct Row {
    ZeroStage stage;
    Extent stored, grads, optimizer;
    bool gather, transient_grads, all_gather_publish, reduce_every_micro_step;
    GradCollective collective;
  };
  const Row rows[] = {
      {ZeroStage::kStage0, Extent::kFull, Extent::kFull, Extent::kFull, false, false, false, false,
       GradCollective::kAllReduce},
      {ZeroStage::kStage1, Extent::kFull, Extent::kFull, Extent::kShard, false, false, true, false,
       GradCollective::kReduceScatter},
      {ZeroStage::kStage2, Extent::kFull, Extent::kShard, Extent::kShard, false, true, true, true,
       GradCollective::kReduceScatter},
      {ZeroStage::kStage3, Extent::kShard, Extent::kShard, Extent::kShard, true, true, false, true,
       GradCollective::kReduceScatter},
  };
  for (const Row& r : rows) {
    const Placement p = make_placement(r.stage, params(DType::kF32), {});
    const std::string where = "stage " + std::to_string(zero_stage_number(r.stage)) + ": " + p.describe();
    EXPECT_EQ(p.stored_params, r.stored) << where;
    EXPECT_EQ(p.grad_accumulator, r.grads) << where;
    EXPECT_EQ(p.optimizer_range, r.optimizer) << where;
    EXPECT_EQ(p.gather_for_compute, r.gather) << where;
    EXPECT_EQ(p.transient_full_grads, r.transient_grads) << where;
    EXPECT_EQ(p.publish_by_all_gather, r.all_gather_publish) << where;
    EXPECT_EQ(p.reduce_every_micro_step, r.reduce_every_micro_step) << where;
    EXPECT_EQ(p.grad_collective, r.collective) << where;
    // f32 parameters are the master and the compute copy (gathered at stage 3 only).
    EXPECT_TRUE(p.master_is_params) << where;
    EXPECT_EQ(p.transient_compute_copy, r.stage == ZeroStage::kStage3) << where;
    EXPECT_EQ(p.params_memory, MemoryKind::kDevice) << where;
    EXPECT_EQ(p.optimizer_memory, MemoryKind::kDevice) << where;
  }
}

TEST(Placement, NonF32ParametersKeepASeparateMasterAndATransientComputeCopy) {
  for (DType d : {DType::kBF16, DType::kF16}) {
    for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
      const Placement p = make_placement(stage, params(d), {});
      EXPECT_FALSE(p.master_is_params) << dtype_name(d);
      EXPECT_TRUE(p.transient_compute_copy) << dtype_name(d);
    }
  }
}

TEST(Placement, OffloadMovesStateToPinnedHostMemory) {
  OffloadConfig optimizer;
  optimizer.optimizer = OffloadTarget::kCpu;
  const Placement p = make_placement(ZeroStage::kStage2, params(DType::kF32), optimizer);
  EXPECT_EQ(p.optimizer_memory, MemoryKind::kPinnedHost);
  EXPECT_EQ(p.params_memory, MemoryKind::kDevice);
  // The master goes with the optimizer, so f32 parameters no longer double as it.
  EXPECT_FALSE(p.master_is_params);

  OffloadConfig both = optimizer;
  both.parameters = OffloadTarget::kCpu;
  const Placement q = make_placement(ZeroStage::kStage3, params(DType::kF32), both);
  EXPECT_EQ(q.params_memory, MemoryKind::kPinnedHost);
  EXPECT_TRUE(q.master_is_params) << "parameters and optimizer share host memory";
}

TEST(Placement, OnADiscreteDeviceTheHostUpdatesOffloadedState) {
  OffloadConfig nvme;
  nvme.optimizer = OffloadTarget::kNvme;
  // The CPU device: f32 parameters stay the master, the files hold m and v only.
  EXPECT_TRUE(make_placement(ZeroStage::kStage2, params(DType::kF32), nvme).master_is_params);
  EXPECT_FALSE(make_placement(ZeroStage::kStage2, params(DType::kF32), nvme).update_on_host);
  // A GPU: the host updates the files' state, so the master goes there too.
  const Placement gpu = make_placement(ZeroStage::kStage2, params(DType::kF32), nvme, false);
  EXPECT_TRUE(gpu.update_on_host);
  EXPECT_FALSE(gpu.master_is_params);
  EXPECT_NE(gpu.describe().find("updated on the host"), std::string::npos) << gpu.describe();
  // Nothing offloaded: the device updates its own state.
  EXPECT_FALSE(make_placement(ZeroStage::kStage2, params(DType::kF32), {}, false).update_on_host);
  // Parameters in host memory need the host to update them: the optimizer must be offloaded too.
  OffloadConfig params_only;
  params_only.parameters = OffloadTarget::kCpu;
  try {
    make_placement(ZeroStage::kStage3, params(DType::kF32), params_only, false);
    FAIL() << "parameter offload without optimizer offload accepted on a GPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs the optimizer offloaded too"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(make_placement(ZeroStage::kStage3, params(DType::kF32), params_only));  // the CPU updates it
}

TEST(Placement, ParameterOffloadNeedsStage3) {
  OffloadConfig o;
  o.parameters = OffloadTarget::kCpu;
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage1, ZeroStage::kStage2}) {
    try {
      make_placement(stage, params(DType::kF32), o);
      FAIL() << "parameter offload accepted below stage 3";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("needs ZeRO stage 3"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera
