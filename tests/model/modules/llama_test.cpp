// The Llama layout: each new module (RMSNorm, rotary grouped-query attention, SwiGLU) and the whole
// model against central finite differences; the rotary op against transformers' formula computed
// here in double (q * cos + rotate_half(q) * sin, key/value heads repeated per group); parameter
// counts against the modules; config validation naming the setting.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "tessera/core/random.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/model/modules/causal_self_attention.hpp"
#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/modules/rms_norm.hpp"
#include "tessera/model/modules/swiglu_mlp.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

GptConfig tiny_llama() { return GptConfig::llama(11, 6, 2, 4, 16, 2, 24); }

Tensor random_tensor(Device& device, Shape shape, std::uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (float& x : v) x = static_cast<float>(scale * rng.normal());
  return Tensor::from_host(device, v, std::move(shape), DType::kF32, MemoryCategory::kWorkspace);
}

// Weights larger than the 0.02 init, so every path carries a visible gradient.
void perturb_parameters(Module& module, std::uint64_t seed, double scale) {
  Rng rng(seed);
  for (auto& np : module.named_parameters()) {
    std::vector<float> v = np.parameter->value.to_host_f32();
    for (float& x : v) x += static_cast<float>(scale * rng.normal());
    np.parameter->value.copy_from_host_f32(v);
  }
}

// sum(module(x) * r): a scalar whose gradient w.r.t. the output is r.
double probe(Module& module, Device& device, const Tensor& x, const std::vector<float>& r) {
  Context ctx(device);
  ctx.training = false;
  const std::vector<float> y = module.forward(ctx, x).to_host_f32();
  double s = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * r[i];
  return s;
}

// Checks the input gradient and `samples` elements of every parameter's gradient of `module` at x
// against central differences of probe(); tolerance 2e-3 absolute + 2% relative.
void expect_gradients_match(Module& module, Device& device, Tensor x, std::uint64_t seed, int samples = 6) {
  allocate_gradients(module, device);
  Context ctx(device);
  const Tensor y = module.forward(ctx, x);
  Rng rng(seed);
  std::vector<float> r(static_cast<std::size_t>(y.numel()));
  for (float& v : r) v = static_cast<float>(rng.normal());
  const std::vector<float> dx =
      module.backward(ctx, Tensor::from_host(device, r, y.shape(), DType::kF32, MemoryCategory::kActivations))
          .to_host_f32();

  const float eps = 3e-3f;
  auto central = [&](const std::function<void(float)>& set, float orig) {
    set(orig + eps);
    const double up = probe(module, device, x, r);
    set(orig - eps);
    const double down = probe(module, device, x, r);
    set(orig);
    return (up - down) / (2.0 * eps);
  };
  std::vector<float> xv = x.to_host_f32();
  for (int s = 0; s < samples; ++s) {
    const auto i = static_cast<std::size_t>(rng.below(xv.size()));
    const double numeric = central(
        [&](float v) {
          xv[i] = v;
          x.copy_from_host_f32(xv);
        },
        xv[i]);
    EXPECT_NEAR(dx[i], numeric, 2e-3 + 0.02 * std::abs(numeric)) << module.type_name() << " input [" << i << "]";
  }
  for (auto& [name, p] : module.named_parameters()) {
    const std::vector<float> grad = p->grad.to_host_f32();
    std::vector<float> value = p->value.to_host_f32();
    for (int s = 0; s < samples; ++s) {
      const auto i = static_cast<std::size_t>(rng.below(value.size()));
      const double numeric = central(
          [&](float v) {
            value[i] = v;
            p->value.copy_from_host_f32(value);
          },
          value[i]);
      EXPECT_NEAR(grad[i], numeric, 2e-3 + 0.02 * std::abs(numeric)) << name << "[" << i << "]";
    }
  }
}

TEST(LlamaModules, RmsNormGradientsMatchFiniteDifferences) {
  auto device = make_cpu_device();
  RmsNorm norm(12);
  materialize_parameters(norm, *device, 1);
  perturb_parameters(norm, 2, 0.5);
  expect_gradients_match(norm, *device, random_tensor(*device, {3, 4, 12}, 3), 4, 10);
}

TEST(LlamaModules, RmsNormComputesTheFormula) {
  auto device = make_cpu_device();
  RmsNorm norm(5, 1e-6f);
  materialize_parameters(norm, *device, 1);
  perturb_parameters(norm, 2, 0.5);
  const Tensor x = random_tensor(*device, {2, 5}, 7);
  Context ctx(*device);
  ctx.training = false;
  const std::vector<float> y = norm.forward(ctx, x).to_host_f32(), xv = x.to_host_f32();
  const std::vector<float> w = norm.named_parameters()[0].parameter->value.to_host_f32();
  for (int row = 0; row < 2; ++row) {
    double ms = 0;
    for (int j = 0; j < 5; ++j) ms += static_cast<double>(xv[row * 5 + j]) * xv[row * 5 + j] / 5;
    for (int j = 0; j < 5; ++j) {
      EXPECT_NEAR(y[row * 5 + j], xv[row * 5 + j] / std::sqrt(ms + 1e-6) * w[j], 1e-5);
    }
  }
}

TEST(LlamaModules, SwiGluGradientsMatchFiniteDifferences) {
  auto device = make_cpu_device();
  SwiGluMlp mlp(8, 12, 0.3f, 0.3f);
  materialize_parameters(mlp, *device, 1);
  expect_gradients_match(mlp, *device, random_tensor(*device, {2, 3, 8}, 5), 6);
  EXPECT_EQ(mlp.named_parameters().size(), 2u) << "gate_up and down, no biases";
}

TEST(LlamaModules, RotaryGroupedQueryAttentionGradientsMatchFiniteDifferences) {
  auto device = make_cpu_device();
  CausalSelfAttention attn(16, 4, 0.3f, 0.3f, RotaryAttentionOptions{2, 100.0f});
  materialize_parameters(attn, *device, 1);
  const auto params = attn.named_parameters();
  ASSERT_EQ(params.size(), 2u) << "qkv and proj, no biases";
  EXPECT_EQ(params[0].parameter->shape, (Shape{16 + 2 * 2 * 4, 16})) << "4 query heads + 2 x 2 key/value heads of 4";
  expect_gradients_match(attn, *device, random_tensor(*device, {2, 5, 16}, 9), 10);
}

// transformers' rotary embedding applied to a (b,t,(nh+2kv)hs) projection, in double.
std::vector<double> reference_rotary(const std::vector<float>& proj, std::int64_t b, std::int64_t t, std::int64_t nh,
                                     std::int64_t kv, std::int64_t hs, double theta) {
  const std::int64_t c = nh * hs, pc = (nh + 2 * kv) * hs, half = hs / 2;
  std::vector<double> out(static_cast<std::size_t>(b * t * 3 * c));
  for (std::int64_t r = 0; r < b * t; ++r) {
    const double pos = static_cast<double>(r % t);
    auto rope = [&](const float* x, double* y) {
      for (std::int64_t j = 0; j < hs; ++j) {
        const std::int64_t pair = j % half;
        const double angle = pos / std::pow(theta, 2.0 * pair / hs);
        const double rotated_half = j < half ? -x[j + half] : x[j - half];
        y[j] = x[j] * std::cos(angle) + rotated_half * std::sin(angle);
      }
    };
    const float* p = proj.data() + r * pc;
    double* o = out.data() + r * 3 * c;
    for (std::int64_t h = 0; h < nh; ++h) {
      const std::int64_t g = h / (nh / kv);
      rope(p + h * hs, o + h * hs);
      rope(p + c + g * hs, o + c + h * hs);
      for (std::int64_t j = 0; j < hs; ++j) o[2 * c + h * hs + j] = p[c + (kv + g) * hs + j];
    }
  }
  return out;
}

TEST(LlamaModules, RotaryOpFollowsTransformersConvention) {
  auto device = make_cpu_device();
  const std::int64_t b = 2, t = 40, nh = 6, kv = 3, hs = 8;
  const Tensor proj = random_tensor(*device, {b, t, (nh + 2 * kv) * hs}, 4);
  Tensor qkv = Tensor::empty(*device, {b, t, 3 * nh * hs}, DType::kF32, MemoryCategory::kWorkspace);
  device->kernels().rotary_qkv_forward(qkv.data_as<float>(), proj.data_as<float>(), b, t, nh, kv, hs, 10000.0f);
  const std::vector<float> got = qkv.to_host_f32();
  const std::vector<double> want = reference_rotary(proj.to_host_f32(), b, t, nh, kv, hs, 10000.0);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-5) << "element " << i;
}

TEST(LlamaModules, WholeModelGradientsMatchFiniteDifferences) {
  auto device = make_cpu_device();
  const GptConfig config = tiny_llama();
  Gpt model(config);
  materialize_parameters(model, *device, 3);
  perturb_parameters(model, 5, 0.3);
  allocate_gradients(model, *device);
  Rng rng(9);
  std::vector<std::int32_t> in(10), tg(10);
  for (auto& v : in) v = static_cast<std::int32_t>(rng.below(config.vocab_size));
  for (auto& v : tg) v = static_cast<std::int32_t>(rng.below(config.vocab_size));
  const Tensor inputs = Tensor::from_host_i32(*device, in, {2, 5}, MemoryCategory::kWorkspace);
  const Tensor targets = Tensor::from_host_i32(*device, tg, {2, 5}, MemoryCategory::kWorkspace);
  auto loss_of = [&] {
    Context ctx(*device);
    ctx.training = false;
    CrossEntropyLoss loss;
    return loss.forward(ctx, model.forward(ctx, inputs), targets);
  };
  {
    Context ctx(*device);
    CrossEntropyLoss loss;
    Tensor logits = model.forward(ctx, inputs);
    loss.forward(ctx, logits, targets);
    logits = Tensor();
    model.backward(ctx, loss.backward(ctx, 1.0f));
    EXPECT_EQ(device->memory().current(MemoryCategory::kActivations), 0) << "every activation released";
  }
  const float eps = 3e-3f;
  Rng pick(11);
  std::vector<std::string> names;
  for (auto& [name, p] : model.named_parameters()) {
    names.push_back(name);
    const std::vector<float> grad = p->grad.to_host_f32();
    std::vector<float> value = p->value.to_host_f32();
    for (int s = 0; s < 5; ++s) {
      const auto i = static_cast<std::size_t>(pick.below(value.size()));
      const float orig = value[i];
      value[i] = orig + eps;
      p->value.copy_from_host_f32(value);
      const double up = loss_of();
      value[i] = orig - eps;
      p->value.copy_from_host_f32(value);
      const double down = loss_of();
      value[i] = orig;
      p->value.copy_from_host_f32(value);
      const double numeric = (up - down) / (2.0 * eps);
      EXPECT_NEAR(grad[i], numeric, 2e-3 + 0.02 * std::abs(numeric)) << name << "[" << i << "]";
    }
  }
  const std::vector<std::string> block{"ln_1.weight", "attn.qkv.weight",    "attn.proj.weight",
                                       "ln_2.weight", "mlp.gate_up.weight", "mlp.down.weight"};
  std::vector<std::string> expected{"embed.wte"};
  for (const char* layer : {"h.0.", "h.1."}) {
    for (const std::string& n : block) expected.push_back(layer + n);
  }
  expected.push_back("ln_f.weight");
  expected.push_back("head.weight");
  EXPECT_EQ(names, expected);
}

TEST(LlamaConfig, ParameterCountsMatchTheModules) {
  std::vector<GptConfig> configs{tiny_llama(), GptConfig::llama(50, 8, 3, 6, 24, 2), GptConfig::llama(50, 8, 1, 4, 16)};
  GptConfig untied_gpt;
  untied_gpt.tied_head = false;
  untied_gpt.ffn_dim = 100;
  configs.push_back(untied_gpt);
  configs.push_back(GptConfig{});
  for (const GptConfig& c : configs) {
    Gpt model(c);
    EXPECT_EQ(model.parameter_count(), c.parameter_count()) << c.to_string();
  }
  EXPECT_EQ(GptConfig::llama(50, 8, 1, 4, 16).mlp_hidden(), 256) << "8/3 x 16 rounded up to 256";
  EXPECT_EQ(GptConfig::llama(32000, 4096, 32, 32, 4096, 32, 11008).parameter_count(), 6738415616)
      << "Llama 2 7B's published count";
  EXPECT_EQ(GptConfig::llama(128256, 8192, 32, 32, 4096, 8, 14336).parameter_count(), 8030261248)
      << "Llama 3 8B's published count";
}

TEST(LlamaConfig, ValidationNamesTheSetting) {
  auto expect_refused = [](GptConfig c, const std::string& setting, const std::string& words) {
    try {
      c.validate();
      FAIL() << "expected " << setting << " to be refused";
    } catch (const SettingError& e) {
      EXPECT_EQ(e.setting(), setting);
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_refused(GptConfig::llama(11, 6, 2, 4, 16, 3), "model.kv_heads", "does not divide the 4 query heads");
  expect_refused(GptConfig::llama(11, 6, 2, 4, 12), "model.heads", "needs an even head size");
  GptConfig gpt;
  gpt.kv_heads = 2;
  expect_refused(gpt, "model.kv_heads", "applies to Llama models");
  GptConfig theta = tiny_llama();
  theta.rope_theta = -1;
  expect_refused(theta, "model.rope_theta", "positive");
}

}  // namespace
}  // namespace tessera
