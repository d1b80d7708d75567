// Activation checkpointing under ZeRO-3 at 2 ranks: the tiny GPT with all blocks, every 2nd block
// or selective recomputation trains bit-identically to the same engine without checkpointing, and
// the recompute reuses the gather issued for the unit's backward (no extra all-gather).
// tessera-test-ranks: 2
// tessera-test-timeout: 120
#include <gtest/gtest.h>
#include <mpi.h>

#include "recompute_test_support.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera {
namespace {

using testing::checkpoint_test_config;

// Forwards every call to MPI_COMM_WORLD's communicator and counts all-gathers.
class GatherCounting final : public Communicator {
 public:
  GatherCounting() : inner_(std::make_unique<MpiCommunicator>(MPI_COMM_WORLD)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::string& name() const override { return inner_->name(); }
  CommBackend backend() const override { return inner_->backend(); }
  MemorySpace memory_space() const override { return inner_->memory_space(); }
  Work all_reduce(Span buf, DType dtype, ReduceOp op) override { return inner_->all_reduce(buf, dtype, op); }
  Work reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) override {
    return inner_->reduce_scatter(in, out, dtype, op);
  }
  Work all_reduce_f32(Span buf, DType wire, ReduceOp op) override { return inner_->all_reduce_f32(buf, wire, op); }
  Work reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) override {
    return inner_->reduce_scatter_f32(in, out, wire, op);
  }
  Work all_gather(ConstSpan in, Span out, DType dtype) override {
    ++all_gathers;
    return inner_->all_gather(in, out, dtype);
  }
  Work broadcast(Span buf, DType dtype, int root) override { return inner_->broadcast(buf, dtype, root); }
  Work barrier() override { return inner_->barrier(); }
  std::unique_ptr<Communicator> split(int color, int key) override { return inner_->split(color, key); }
  void set_collective_check(CollectiveCheck check) override { inner_->set_collective_check(check); }
  CollectiveCheck collective_check() const override { return inner_->collective_check(); }

  int all_gathers = 0;

 private:
  std::unique_ptr<Communicator> inner_;
};

struct Zero3Run {
  std::vector<float> losses;
  std::vector<double> norms;
  std::vector<testing::NamedValues> params;  // full parameters after the last step
  int all_gathers_last_step = 0;
};

Zero3Run zero3_run(const RecomputePolicy& policy) {
  auto device = make_cpu_device();
  GatherCounting world;
  const GptConfig c = checkpoint_test_config();
  Gpt model(c);
  apply_recompute(model, policy);  // before the engine wraps the units
  ShardingConfig config;
  config.stage = ZeroStage::kStage3;
  Zero3Run run;
  ShardedEngine engine(model, *device, world, config, 5);
  Trainer trainer(engine);
  for (int step = 0; step < 3; ++step) {
    // Each rank trains on its own half of a global batch of 4 sequences.
    auto b = testing::random_tokens(*device, c, 2, c.max_seq_len, 1000 * step + world.rank());
    const int before = world.all_gathers;
    const StepResult r = trainer.train_step({MicroBatch{b.inputs, b.targets}}, 1e-2f);
    run.all_gathers_last_step = world.all_gathers - before;
    run.losses.push_back(r.loss);
    run.norms.push_back(r.grad_norm);
  }
  const auto full = gather_full_parameters(engine);
  for (const NamedParameter& np : model.named_parameters()) run.params.push_back({np.name, full.at(np.name)});
  return run;
}

TEST(ActivationCheckpointingZero3, TrainsBitIdenticallyWithoutExtraGathers) {
  int ranks = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (ranks < 2) GTEST_SKIP() << "ZeRO-3 needs at least 2 ranks (run under mpirun -np 2)";
  const Zero3Run expected = zero3_run(RecomputePolicy::none());
  EXPECT_GT(expected.all_gathers_last_step, 0);
  for (const RecomputePolicy& policy :
       {RecomputePolicy::by_type("TransformerBlock"), RecomputePolicy::every_kth(2), RecomputePolicy::selective()}) {
    const std::string what = policy.to_string() + " under ZeRO-3, rank " + std::to_string(rank);
    const Zero3Run actual = zero3_run(policy);
    EXPECT_EQ(actual.losses, expected.losses) << what;
    EXPECT_EQ(actual.norms, expected.norms) << what;
    testing::expect_bit_identical(expected.params, actual.params, what);
    EXPECT_EQ(actual.all_gathers_last_step, expected.all_gathers_last_step)
        << what << ": all-gathers in one step (the recompute must reuse the backward's gather)";
  }
}

}  // namespace
}  // namespace tessera
