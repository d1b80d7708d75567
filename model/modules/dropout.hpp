// Dropout: in training, each element of x is zeroed with probability p and the others scaled by
// 1 / (1 - p); in inference (ctx.training false) it is the identity (x itself is returned).
// x (...) -> y (...) of x's dtype (f32 or bf16), through the Kernels op dropout_apply.
//
// The mask is a pure function of four things and nothing else:
//   * the seed and the module's full name (e.g. "3", "h.0.drop"), given by seed_dropout(): the
//     module's stream, mix64(seed ^ FNV-1a(full name));
//   * the module's counter: the number of backward passes it has completed (since seed_dropout set
//     it); the key of a forward is SplitMix64's (counter + 1)-th output from the stream;
//   * the element's index in x (row-major), hashed with the key (runtime/math/dropout_math.hpp).
// So the same seed, model and call sequence give the same masks on any device, CPU or GPU, any
// thread count, and at every ZeRO stage (the stages run the same forward and backward calls). Every
// rank of a step draws the same mask for its own micro-batch (the index counts within the rank's
// tensor): a run on another rank count draws other masks, as its micro-batches are other tensors.
// The counter advances in backward, not forward, so a recomputed forward (activation checkpointing
// runs forward again before backward) draws the mask of the first forward. Backward regenerates the
// mask from the key kept by forward (8 bytes, no mask tensor).
//
// Resuming: a run resumed after S optimizer steps of A micro-batches each (one backward per
// micro-batch) draws the uninterrupted run's masks when its Dropout counters are set to S * A:
//   seed_dropout(model, seed, /*counter=*/run.progress().step * plan.accumulation);
#pragma once

#include <cstdint>
#include <string>

#include "tessera/model/module.hpp"
#include "tessera/runtime/math/dropout_math.hpp"

namespace tessera {

class Dropout final : public Module {
 public:
  // p in [0, 1); throws std::invalid_argument otherwise.
  explicit Dropout(float p);

  std::string type_name() const override { return "Dropout"; }
  // Training with p > 0 needs seed_dropout() first (throws std::logic_error saying so).
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

  float p() const { return p_; }
  // The mask stream of (seed, full_name); resets the counter to `counter`.
  void seed(std::uint64_t seed, const std::string& full_name, std::uint64_t counter = 0);
  bool seeded() const { return seeded_; }
  std::uint64_t counter() const { return counter_; }
  // The mask the next training forward draws.
  DropoutMask next_mask() const;

 protected:
  void clear_own_saved() override { pending_ = false; }

 private:
  float p_;
  bool seeded_ = false;
  std::uint64_t stream_ = 0;
  std::uint64_t counter_ = 0;
  bool pending_ = false;  // a training forward awaits its backward
  DropoutMask mask_;      // of that forward
  Shape shape_;           // x's shape in that forward
};

// Seeds every Dropout in `root` with (seed, its full name) and sets its counter: 0 for a new run,
// the backward passes already done for a resume (see above). Call on the model after building it;
// an engine's wrappers do not change full names, so before or after wrapping is the same. Returns
// how many Dropout modules it seeded.
int seed_dropout(Module& root, std::uint64_t seed, std::uint64_t counter = 0);

}  // namespace tessera
