// Shared pieces of the module tests: inputs from a seed, the projected loss L(x) = sum_i w_i y_i of a
// module's output, its gradients from one forward/backward, and their check against central finite
// differences of L in the inputs and in every parameter element.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/model/module.hpp"
#include "tessera/precision/float_bits.hpp"
#include "tessera/runtime/device.hpp"

namespace tessera::testing {

// n values uniform in [lo, hi) from `seed`; with `gap` > 0, none closer than gap to 0 (away from a
// ReLU's kink, where central differences straddle it).
inline std::vector<float> uniform_values(std::size_t n, std::uint64_t seed, float lo, float hi, float gap = 0.0f) {
  Rng rng(seed);
  std::vector<float> out(n);
  for (float& v : out) {
    do {
      v = lo + (hi - lo) * static_cast<float>(static_cast<double>(rng.next_u64() >> 11) * 0x1.0p-53);
    } while (std::fabs(v) < gap);
  }
  return out;
}

// The values rounded to bf16 and back (inputs both dtypes represent exactly).
inline std::vector<float> bf16_rounded(std::vector<float> v) {
  for (float& x : v) x = bf16_to_f32(f32_to_bf16(x));
  return v;
}

// sum_i w_i y_i in double, y the module's training-mode output on x (the state it kept is dropped
// again: a Dropout's counter does not move, so every evaluation draws the same mask).
inline double projected_loss(Module& m, Device& device, const std::vector<float>& x, const Shape& shape,
                             const std::vector<float>& w, DType dtype = DType::kF32) {
  Context ctx(device);
  const Tensor y = m.forward(ctx, Tensor::from_host(device, x, shape, dtype, MemoryCategory::kActivations));
  m.clear_saved();
  const std::vector<float> yv = y.to_host_f32();
  EXPECT_EQ(yv.size(), w.size());
  double sum = 0.0;
  for (std::size_t i = 0; i < yv.size() && i < w.size(); ++i) sum += static_cast<double>(w[i]) * yv[i];
  return sum;
}

struct ModuleGradients {
  std::vector<float> output;
  std::vector<float> dx;
  std::vector<std::vector<float>> dparams;  // in named_parameters order
};

// One training forward and backward with dy = w; parameter gradients zeroed first.
inline ModuleGradients module_gradients(Module& m, Device& device, const std::vector<float>& x, const Shape& shape,
                                        const std::vector<float>& w, DType dtype = DType::kF32) {
  zero_gradients(m);
  Context ctx(device);
  ModuleGradients g;
  const Tensor y = m.forward(ctx, Tensor::from_host(device, x, shape, dtype, MemoryCategory::kActivations));
  g.output = y.to_host_f32();
  const Tensor dx = m.backward(ctx, Tensor::from_host(device, w, y.shape(), dtype, MemoryCategory::kActivations));
  g.dx = dx.to_host_f32();
  for (const NamedParameter& np : m.named_parameters()) g.dparams.push_back(np.parameter->grad.to_host_f32());
  return g;
}

// |analytic - numeric| <= atol + rtol |numeric| for dL/dx and every parameter gradient element, the
// numeric one a central difference with step h (f32 forward, L summed in double). The differences
// are taken first, then the one backward (which moves a Dropout's counter on). Parameters must be
// f32 tensors on the CPU (they are perturbed in place and put back).
inline void expect_matches_finite_differences(Module& m, Device& device, const std::vector<float>& x,
                                              const Shape& shape, const std::vector<float>& w, const std::string& what,
                                              float h = 1e-2f, double atol = 2e-3, double rtol = 1e-2) {
  std::vector<double> numeric_dx(x.size());
  std::vector<float> xp = x;
  for (std::size_t i = 0; i < x.size(); ++i) {
    xp[i] = x[i] + h;
    const double up = projected_loss(m, device, xp, shape, w);
    xp[i] = x[i] - h;
    const double down = projected_loss(m, device, xp, shape, w);
    xp[i] = x[i];
    numeric_dx[i] = (up - down) / (2.0 * h);
  }
  const std::vector<NamedParameter> params = m.named_parameters();
  std::vector<std::vector<double>> numeric_dparams(params.size());
  for (std::size_t p = 0; p < params.size(); ++p) {
    Tensor& value = params[p].parameter->value;
    std::vector<float> v = value.to_host_f32();
    for (std::size_t i = 0; i < v.size(); ++i) {
      const float keep = v[i];
      v[i] = keep + h;
      value.copy_from_host_f32(v);
      const double up = projected_loss(m, device, x, shape, w);
      v[i] = keep - h;
      value.copy_from_host_f32(v);
      const double down = projected_loss(m, device, x, shape, w);
      v[i] = keep;
      value.copy_from_host_f32(v);
      numeric_dparams[p].push_back((up - down) / (2.0 * h));
    }
  }
  const ModuleGradients g = module_gradients(m, device, x, shape, w);
  ASSERT_EQ(g.dx.size(), x.size()) << what;
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(g.dx[i], numeric_dx[i], atol + rtol * std::fabs(numeric_dx[i])) << what << ": dL/dx[" << i << "]";
  }
  for (std::size_t p = 0; p < params.size(); ++p) {
    for (std::size_t i = 0; i < numeric_dparams[p].size(); ++i) {
      EXPECT_NEAR(g.dparams[p][i], numeric_dparams[p][i], atol + rtol * std::fabs(numeric_dparams[p][i]))
          << what << ": dL/d " << params[p].name << "[" << i << "]";
    }
  }
}

}  // namespace tessera::testing
