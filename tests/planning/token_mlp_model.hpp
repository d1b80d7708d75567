// A model the library does not ship, for the planner tests of custom models: token ids (B,T) i32 ->
// Embedding (B,T,C) -> LayerNorm -> Linear + GELU (B,T,H) -> Linear + GELU (B,T,H) -> Linear (B,T,K),
// built from the shipped modules and called through their slots (the GELU runs in the model's own
// forward, through the device's Kernels table). Trained with a mean squared error against (B,T,K)
// f32 targets, computed in its own step function from the Kernels ops (scale, add, sum_squares) —
// not the Trainer's cross-entropy.
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

// One optimizer step of mean squared error over micro-batches (inputs (B,T) i32, targets (B,T,K) f32),
// f32 compute: per micro-batch forward, loss = mean((y - target)^2) (a device double, read back where
// the device holds data), dy = 2 (y - target) scale / n written over y, backward (the reduction
// deferred to the last micro-batch); then the engine's step. Appends the step's mean loss to `losses`
// on a device with data (not null).
inline void token_mlp_mse_step(ShardedEngine& engine, const std::vector<MicroBatchTensors>& micro_batches, float lr,
                               std::vector<double>* losses) {
  engine.zero_grad();
  Device& device = engine.device();
  const Kernels& kernels = device.kernels();
  Context ctx(device);
  const float scale = engine.loss_scale() / static_cast<float>(micro_batches.size());
  auto device_sum = Storage::allocate(device, sizeof(double), MemoryCategory::kWorkspace);
  double loss = 0.0;
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    Tensor y = engine.forward(ctx, micro_batches[i][0]);  // (B,T,K) f32
    const Tensor& target = micro_batches[i][1];           // (B,T,K) f32
    const std::int64_t n = y.numel();
    kernels.scale(y.data_as<float>(), -1.0f, n);
    kernels.add(y.data_as<float>(), y.data_as<float>(), target.data_as<float>(), n);  // target - y
    kernels.sum_squares(y.data_as<float>(), n, static_cast<double*>(device_sum->data()));
    if (device.holds_data()) {
      double sum = 0.0;
      device.copy_to_host(&sum, device_sum->data(), sizeof(double));
      loss += sum / static_cast<double>(n);
    }
    kernels.scale(y.data_as<float>(), -2.0f * scale / static_cast<float>(n), n);  // d(scale * loss)/dy
    engine.note_phase("loss");
    engine.backward(ctx, std::move(y), i + 1 == micro_batches.size() ? GradSync::kReduce : GradSync::kDefer);
  }
  device_sum.reset();
  engine.step(lr);
  if (losses != nullptr && device.holds_data()) losses->push_back(loss / static_cast<double>(micro_batches.size()));
}

// The model's sizes in the tests: 11 token ids, 5 positions, 8 channels, 12 hidden, 3 outputs.
inline constexpr std::int64_t kMlpVocab = 11, kMlpSeqLen = 5, kMlpChannels = 8, kMlpHidden = 12, kMlpOutputs = 3;

// The planner's description of it: build, one sample (inputs (5) i32 ids, targets (5,3) f32), and
// its MSE step recording into `losses` (may be null).
inline CustomModel token_mlp_model(std::vector<double>* losses = nullptr) {
  CustomModel m;
  m.build = [] { return std::make_unique<TokenMlp>(kMlpVocab, kMlpSeqLen, kMlpChannels, kMlpHidden, kMlpOutputs); };
  m.batch = {{"inputs", {kMlpSeqLen}, DType::kI32, kMlpVocab}, {"targets", {kMlpSeqLen, kMlpOutputs}, DType::kF32}};
  m.step = [losses](ShardedEngine& engine, const std::vector<MicroBatchTensors>& micro_batches, float lr) {
    token_mlp_mse_step(engine, micro_batches, lr, losses);
  };
  return m;
}

}  // namespace tessera::testing
