// Shared pieces of the sharding tests: the tiny GPT, batches as a function of (step, global row),
// a single-process reference run, and a Communicator decorator that records what it is asked to send.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/core/random.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/local_trainer.hpp"
#include "tests/comm/comm_test_support.hpp"

namespace tessera::testing {

// Parameter counts chosen so that units do not divide evenly by 2 or 4 ranks (padding is exercised).
inline GptConfig tiny_gpt() {
  GptConfig c;
  c.vocab_size = 13;
  c.max_seq_len = 6;
  c.layers = 2;
  c.heads = 3;
  c.channels = 9;
  return c;
}

// Rows [first, first + count) of the global batch of `step`: row content depends on (step, row) only.
inline MicroBatch global_rows(Device& device, const GptConfig& c, int step, std::int64_t first, std::int64_t count) {
  std::vector<std::int32_t> in, tg;
  for (std::int64_t r = first; r < first + count; ++r) {
    Rng rng(static_cast<std::uint64_t>(step) * 7919u + static_cast<std::uint64_t>(r));
    for (std::int64_t t = 0; t < c.max_seq_len; ++t) {
      in.push_back(static_cast<std::int32_t>(rng.below(c.vocab_size)));
      tg.push_back(static_cast<std::int32_t>(rng.below(c.vocab_size)));
    }
  }
  return {Tensor::from_host_i32(device, in, {count, c.max_seq_len}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {count, c.max_seq_len}, MemoryCategory::kWorkspace)};
}

struct RunResult {
  std::vector<float> losses;
  std::vector<double> norms;
  std::vector<std::vector<float>> params;  // final full parameters, in named_parameters order
};

inline constexpr std::uint64_t kSeed = 17;
inline constexpr float kLr = 3e-3f;
inline constexpr float kClip = 0.5f;  // low enough that the first steps clip

inline AdamWConfig test_adamw() {
  AdamWConfig a;
  a.weight_decay = 0.1f;
  return a;
}

// One process trains on the whole global batch (`global` rows per step, one micro-batch).
inline RunResult reference_run(int steps, std::int64_t global) {
  auto device = make_cpu_device();
  Gpt model(tiny_gpt());
  materialize_parameters(model, *device, kSeed);
  LocalTrainer trainer(model, *device, test_adamw(), kClip);
  RunResult out;
  for (int s = 0; s < steps; ++s) {
    const StepResult r = trainer.step({global_rows(*device, tiny_gpt(), s, 0, global)}, kLr);
    out.losses.push_back(r.loss);
    out.norms.push_back(r.grad_norm);
  }
  for (Parameter* p : model.parameters()) out.params.push_back(p->value.to_host_f32());
  return out;
}

// EXPECTs the same losses and gradient norms (unless !losses_too) and the same parameters, bit for
// bit, naming `what`, the step or parameter, and the rank.
inline void expect_identical(const RunResult& actual, const RunResult& expected, const std::string& what,
                             bool losses_too = true) {
  ASSERT_EQ(actual.losses.size(), expected.losses.size()) << what;
  for (std::size_t s = 0; s < expected.losses.size() && losses_too; ++s) {
    EXPECT_EQ(actual.losses[s], expected.losses[s]) << what << ": loss at step " << s << ", rank " << world_rank();
    EXPECT_EQ(actual.norms[s], expected.norms[s]) << what << ": norm at step " << s << ", rank " << world_rank();
  }
  ASSERT_EQ(actual.params.size(), expected.params.size()) << what;
  for (std::size_t p = 0; p < expected.params.size(); ++p) {
    std::size_t differing = 0;
    for (std::size_t i = 0; i < expected.params[p].size(); ++i) differing += actual.params[p][i] != expected.params[p][i];
    EXPECT_EQ(differing, 0u) << what << ": parameter " << p << " has differing elements, rank " << world_rank();
  }
}

// Forwards every call to an inner communicator and records the dtype of each reduce collective (the
// wire dtype of the _f32 ones), and separately those of the collectives on buffers of that dtype.
class RecordingCommunicator final : public Communicator {
 public:
  explicit RecordingCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::string& name() const override { return inner_->name(); }
  CommBackend backend() const override { return inner_->backend(); }
  MemorySpace memory_space() const override { return inner_->memory_space(); }
  Work all_reduce(Span buf, DType dtype, ReduceOp op) override {
    if (buf.count > 1) {
      reduce_dtypes.push_back(dtype);
      plain_reduce_dtypes.push_back(dtype);
    }
    return inner_->all_reduce(buf, dtype, op);
  }
  Work reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) override {
    reduce_dtypes.push_back(dtype);
    plain_reduce_dtypes.push_back(dtype);
    return inner_->reduce_scatter(in, out, dtype, op);
  }
  Work all_reduce_f32(Span buf, DType wire, ReduceOp op) override {
    if (buf.count > 1) reduce_dtypes.push_back(wire);
    return inner_->all_reduce_f32(buf, wire, op);
  }
  Work reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) override {
    reduce_dtypes.push_back(wire);
    return inner_->reduce_scatter_f32(in, out, wire, op);
  }
  Work all_gather(ConstSpan in, Span out, DType dtype) override { return inner_->all_gather(in, out, dtype); }
  Work broadcast(Span buf, DType dtype, int root) override { return inner_->broadcast(buf, dtype, root); }
  Work barrier() override { return inner_->barrier(); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    auto sub = inner_->split(color, key);
    return sub ? std::make_unique<RecordingCommunicator>(std::move(sub)) : nullptr;
  }
  void set_collective_check(CollectiveCheck check) override { inner_->set_collective_check(check); }
  CollectiveCheck collective_check() const override { return inner_->collective_check(); }

  std::vector<DType> reduce_dtypes;  // gradient collectives seen (scalars excluded), as they travel
  // Those of them on buffers already in their wire dtype (all_reduce, reduce_scatter; not the _f32 ones).
  std::vector<DType> plain_reduce_dtypes;

 private:
  std::unique_ptr<Communicator> inner_;
};

}  // namespace tessera::testing
