// A model the library does not ship, for the planner tests of custom models: token ids (B,T) i32 ->
// Embedding (B,T,C) -> LayerNorm -> Linear + GELU (B,T,H) -> Linear + GELU (B,T,H) -> Linear (B,T,K),
// built from the shipped modules and called through their slots (the GELU runs in the model's own
// forward, through the device's Kernels table). Trained with a mean squared error against (B,T,K)
// f32 targets (MeanSquaredError through the Trainer), not the token cross-entropy.
#pragma once

#include <memory>
#include <vector>

#include "tessera/model/module.hpp"
#include "tessera/model/modules/embedding.hpp"
#include "tessera/model/modules/layer_norm.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/planning/custom_model.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/storage.hpp"
#include "tessera/runtime/stream.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/losses/mean_squared_error.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {

class TokenMlp final : public Module {
 public:
  TokenMlp(std::int64_t vocab, std::int64_t seq_len, std::int64_t channels, std::int64_t hidden, std::int64_t outputs)
      : embed_(register_child("embed", std::make_unique<Embedding>(vocab, seq_len, channels))),
        norm_(register_child("norm", std::make_unique<LayerNorm>(channels))),
        fc1_(register_child("fc1", std::make_unique<Linear>(channels, hidden, true))),
        fc2_(register_child("fc2", std::make_unique<Linear>(hidden, hidden, true))),
        out_(register_child("out", std::make_unique<Linear>(hidden, outputs, true))) {}

  std::string type_name() const override { return "TokenMlp"; }

  // tokens (B,T) i32 -> (B,T,K) in the compute dtype.
  Tensor forward(Context& ctx, const Tensor& tokens) override {
    Tensor x = norm_->forward(ctx, embed_->forward(ctx, tokens));
    Tensor h1 = fc1_->forward(ctx, x);
    Tensor g1 = gelu(ctx, h1);
    if (ctx.training) pre1_ = h1;
    h1 = Tensor();
    Tensor h2 = fc2_->forward(ctx, g1);
    Tensor g2 = gelu(ctx, h2);
    if (ctx.training) pre2_ = h2;
    return out_->forward(ctx, g2);
  }

  // dy (B,T,K) -> nothing (token ids have no gradient); accumulates every parameter's gradient.
  Tensor backward(Context& ctx, Tensor dy) override {
    Tensor dg2 = out_->backward(ctx, dy);
    gelu_backward_in_place(ctx, dg2, pre2_);
    pre2_ = Tensor();
    Tensor dg1 = fc2_->backward(ctx, dg2);
    dg2 = Tensor();
    gelu_backward_in_place(ctx, dg1, pre1_);
    pre1_ = Tensor();
    Tensor dx = fc1_->backward(ctx, dg1);
    dg1 = Tensor();
    return embed_->backward(ctx, norm_->backward(ctx, dx));
  }

 protected:
  void clear_own_saved() override {
    pre1_ = Tensor();
    pre2_ = Tensor();
  }

 private:
  static Tensor gelu(Context& ctx, const Tensor& h) {
    Tensor g = new_activation(ctx, h.shape(), h.dtype());
    with_element_type(h.dtype(), "TokenMlp", [&]<typename T>() {
      ctx.device.kernels().gelu_forward(g.data_as<T>(), h.data_as<T>(), h.numel());
    });
    return g;
  }
  // dg (the GELU output's gradient) becomes the gradient of its input `pre`.
  static void gelu_backward_in_place(Context& ctx, Tensor& dg, const Tensor& pre) {
    with_element_type(dg.dtype(), "TokenMlp::backward", [&]<typename T>() {
      ctx.device.kernels().gelu_backward(dg.data_as<T>(), pre.data_as<T>(), dg.data_as<T>(), dg.numel());
    });
  }

  ModuleSlot& embed_;
  ModuleSlot& norm_;
  ModuleSlot& fc1_;
  ModuleSlot& fc2_;
  ModuleSlot& out_;
  Tensor pre1_, pre2_;  // (B,T,H) the GELUs' inputs, kept for backward
};

// One optimizer step of the run's loop with mean squared error (inputs (B,T) i32, targets (B,T,K)
// f32): Trainer::train_step with MeanSquaredError, as TrainingRun takes it. Appends the step's loss to
// `losses` on a device with data (not null).
inline void token_mlp_mse_step(ShardedEngine& engine, const std::vector<MicroBatch>& micro_batches, float lr,
                               std::vector<double>* losses) {
  const StepResult r = Trainer(engine, std::make_shared<MeanSquaredError>()).train_step(micro_batches, lr);
  if (losses != nullptr && engine.device().holds_data()) losses->push_back(r.loss);
}

// The model's sizes in the tests: 11 token ids, 5 positions, 8 channels, 12 hidden, 3 outputs.
inline constexpr std::int64_t kMlpVocab = 11, kMlpSeqLen = 5, kMlpChannels = 8, kMlpHidden = 12, kMlpOutputs = 3;

// The planner's description of it: build, one sample (inputs (5) i32 ids, targets (5,3) f32), its
// loss (MeanSquaredError), and with `losses` a step recording them.
inline CustomModel token_mlp_model(std::vector<double>* losses = nullptr) {
  CustomModel m;
  m.build = [] { return std::make_unique<TokenMlp>(kMlpVocab, kMlpSeqLen, kMlpChannels, kMlpHidden, kMlpOutputs); };
  m.batch = {{"inputs", {kMlpSeqLen}, DType::kI32, kMlpVocab}, {"targets", {kMlpSeqLen, kMlpOutputs}, DType::kF32}};
  m.loss = std::make_shared<MeanSquaredError>();
  if (losses != nullptr) {  // the same step, recording its losses
    m.step = [losses](ShardedEngine& engine, const std::vector<MicroBatch>& micro_batches, float lr) {
      token_mlp_mse_step(engine, micro_batches, lr, losses);
    };
  }
  return m;
}

}  // namespace tessera::testing
