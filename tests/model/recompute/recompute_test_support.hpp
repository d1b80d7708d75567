// Helpers for the activation-checkpointing tests: a tiny GPT, a random batch, one training
// forward/backward, and a bit-exact comparison of every gradient that reports the parameter, the
// number of differing elements and the first one (expected vs actual).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/runtime/device.hpp"

namespace tessera::testing {

// B=2, T=8, C=16, NH=2, V=32, L=4: small enough to run in milliseconds, deep enough that every:2
// and full-block checkpointing differ.
inline GptConfig checkpoint_test_config() {
  GptConfig c;
  c.vocab_size = 32;
  c.max_seq_len = 8;
  c.layers = 4;
  c.heads = 2;
  c.channels = 16;
  return c;
}

struct TokenBatch {
  Tensor inputs, targets;  // (B,T) i32
};

inline TokenBatch random_tokens(Device& device, const GptConfig& c, std::int64_t b, std::int64_t t,
                                std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::int32_t> in(static_cast<std::size_t>(b * t)), tg(in.size());
  for (auto& x : in) x = static_cast<std::int32_t>(rng.below(c.vocab_size));
  for (auto& x : tg) x = static_cast<std::int32_t>(rng.below(c.vocab_size));
  return {Tensor::from_host_i32(device, in, {b, t}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {b, t}, MemoryCategory::kWorkspace)};
}

// A materialised GPT (seed 3) with `policy` applied, gradients allocated.
inline std::unique_ptr<Gpt> make_model(Device& device, const RecomputePolicy& policy,
                                       const GptConfig& config = checkpoint_test_config()) {
  auto model = std::make_unique<Gpt>(config);
  apply_recompute(*model, policy);
  materialize_parameters(*model, device, 3);
  allocate_gradients(*model, device);
  return model;
}

// One training forward + loss + backward (as LocalTrainer runs it); returns the loss.
inline float forward_backward(Module& model, Device& device, const TokenBatch& batch) {
  Context ctx(device);
  CrossEntropyLoss loss;
  Tensor logits = model.forward(ctx, batch.inputs);
  const float value = loss.forward(ctx, logits, batch.targets);
  logits = Tensor();
  model.backward(ctx, loss.backward(ctx, 1.0f));
  return value;
}

struct NamedValues {
  std::string name;
  std::vector<float> values;
};

inline std::vector<NamedValues> gradients_of(Module& model) {
  std::vector<NamedValues> out;
  for (auto& [name, p] : model.named_parameters()) out.push_back({name, p->grad.to_host_f32()});
  return out;
}

inline std::vector<NamedValues> values_of(Module& model) {
  std::vector<NamedValues> out;
  for (auto& [name, p] : model.named_parameters()) out.push_back({name, p->value.to_host_f32()});
  return out;
}

// EXPECTs every element of `actual` to equal `expected` bit for bit (compared as floats; no NaNs
// arise here). `what` names the run in failure messages.
inline void expect_bit_identical(const std::vector<NamedValues>& expected, const std::vector<NamedValues>& actual,
                                 const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what << ": parameter count";
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(expected[i].name, actual[i].name) << what << ": parameter " << i;
    const auto& e = expected[i].values;
    const auto& a = actual[i].values;
    ASSERT_EQ(e.size(), a.size()) << what << ": " << e.size() << " elements of " << expected[i].name;
    std::size_t wrong = 0, first = 0;
    for (std::size_t j = 0; j < e.size(); ++j) {
      if (std::memcmp(&e[j], &a[j], sizeof(float)) != 0 && wrong++ == 0) first = j;
    }
    EXPECT_EQ(wrong, 0u) << what << ": " << wrong << " of " << e.size() << " elements of " << expected[i].name
                         << " differ; first at index " << first << ": expected " << e[first] << ", actual " << a[first];
  }
}

}  // namespace tessera::testing
