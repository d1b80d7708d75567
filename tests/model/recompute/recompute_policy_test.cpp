// apply_recompute on the tiny GPT: every policy (all blocks, every 2nd block, by
// name, selective) gives gradients and training steps bit-identical to the unwrapped model's,
// selects the modules it says, leaves parameter names alone, and parse_recompute_policy accepts
// exactly the train_gpt spellings.
#include "tessera/model/recompute/recompute_policy.hpp"

#include <gtest/gtest.h>

#include "recompute_test_support.hpp"
#include "tessera/model/modules/causal_self_attention.hpp"
#include "tessera/model/modules/transformer_block.hpp"
#include "tessera/model/recompute/recompute_wrapper.hpp"
#include "tessera/training/local_trainer.hpp"

namespace tessera {
namespace {

using testing::checkpoint_test_config;
using testing::expect_bit_identical;
using testing::forward_backward;
using testing::gradients_of;
using testing::make_model;
using testing::random_tokens;

std::vector<RecomputePolicy> policies_under_test() {
  return {RecomputePolicy::by_type("TransformerBlock"), RecomputePolicy::every_kth(2), RecomputePolicy::selective(),
          RecomputePolicy::by_name([](const std::string& name, const Module&) {
            return name == "h.1" || name == "h.3.mlp" || name == "head";
          })};
}

std::string policy_label(const RecomputePolicy& p) {
  return p.kind == RecomputePolicyKind::kByName ? "by-name(h.1, h.3.mlp, head)" : p.to_string();
}

TEST(ActivationCheckpointing, GradientsAreBitIdenticalToTheUnwrappedModel) {
  auto device = make_cpu_device();
  const auto batch = random_tokens(*device, checkpoint_test_config(), 2, 8, 9);
  auto plain = make_model(*device, RecomputePolicy::none());
  const float expected_loss = forward_backward(*plain, *device, batch);
  const auto expected = gradients_of(*plain);
  for (const RecomputePolicy& policy : policies_under_test()) {
    auto model = make_model(*device, policy);
    // Two accumulated backward passes: the second also checks that nothing stale is left behind.
    const float loss = forward_backward(*model, *device, batch);
    EXPECT_EQ(loss, expected_loss) << policy_label(policy);
    expect_bit_identical(expected, gradients_of(*model), policy_label(policy));
    zero_gradients(*model);
    forward_backward(*model, *device, batch);
    expect_bit_identical(expected, gradients_of(*model), policy_label(policy) + ", second step");
    EXPECT_EQ(device->memory().current(MemoryCategory::kActivations), 0) << policy_label(policy);
  }
}

TEST(ActivationCheckpointing, TrainingStepsAreBitIdentical) {
  auto run = [](const RecomputePolicy& policy) {
    auto device = make_cpu_device();
    auto model = make_model(*device, policy);
    LocalTrainer trainer(*model, *device, AdamWConfig{}, 1.0f);
    std::vector<float> losses;
    for (int step = 0; step < 3; ++step) {
      std::vector<MicroBatch> micro;
      for (int a = 0; a < 2; ++a) {
        auto b = random_tokens(*device, checkpoint_test_config(), 2, 8, 100 + 2 * step + a);
        micro.push_back({b.inputs, b.targets});
      }
      losses.push_back(trainer.step(micro, 1e-2f).loss);
    }
    return std::make_pair(losses, testing::values_of(*model));
  };
  const auto [expected_losses, expected_values] = run(RecomputePolicy::none());
  for (const RecomputePolicy& policy : policies_under_test()) {
    const auto [losses, values] = run(policy);
    EXPECT_EQ(losses, expected_losses) << policy_label(policy);
    expect_bit_identical(expected_values, values, policy_label(policy) + " parameters after 3 AdamW steps");
  }
}

std::vector<std::string> names_of_type(Module& root, const std::string& type) {
  std::vector<std::string> out;
  for (auto& nm : root.named_modules()) {
    if (nm.module->type_name() == type) out.push_back(nm.name);
  }
  return out;
}

TEST(ActivationCheckpointing, PoliciesSelectTheirModules) {
  using Names = std::vector<std::string>;
  GptConfig config = checkpoint_test_config();
  config.layers = 5;
  {
    Gpt model(config);
    EXPECT_EQ(apply_recompute(model, RecomputePolicy::by_type("TransformerBlock")),
              (Names{"h.0", "h.1", "h.2", "h.3", "h.4"}));
    EXPECT_EQ(names_of_type(model, "RecomputeWrapper"), (Names{"h.0", "h.1", "h.2", "h.3", "h.4"}));
    // Applying again wraps nothing twice.
    EXPECT_EQ(apply_recompute(model, RecomputePolicy::by_type("TransformerBlock")), Names{});
    EXPECT_EQ(names_of_type(model, "RecomputeWrapper").size(), 5u);
  }
  {
    Gpt model(config);
    EXPECT_EQ(apply_recompute(model, RecomputePolicy::every_kth(2)), (Names{"h.0", "h.2", "h.4"}));
    EXPECT_EQ(names_of_type(model, "RecomputeWrapper"), (Names{"h.0", "h.2", "h.4"}));
  }
  {
    Gpt model(config);
    EXPECT_EQ(apply_recompute(model, parse_recompute_policy("every:3")), (Names{"h.0", "h.3"}));
  }
  {
    Gpt model(config);
    EXPECT_EQ(apply_recompute(model, RecomputePolicy::by_type("LayerNorm")),
              (Names{"h.0.ln_1", "h.0.ln_2", "h.1.ln_1", "h.1.ln_2", "h.2.ln_1", "h.2.ln_2", "h.3.ln_1", "h.3.ln_2",
                     "h.4.ln_1", "h.4.ln_2", "ln_f"}));
  }
  {
    Gpt model(config);
    EXPECT_EQ(apply_recompute(model, RecomputePolicy::selective()), (Names{"h.0", "h.1", "h.2", "h.3", "h.4"}));
    EXPECT_TRUE(names_of_type(model, "RecomputeWrapper").empty()) << "selective wraps nothing";
    for (auto& nm : model.named_modules()) {
      if (auto* block = dynamic_cast<TransformerBlock*>(nm.module)) {
        EXPECT_EQ(block->recompute(), RecomputeMode::kElementwise) << nm.name;
      }
    }
  }
  {
    Gpt model(config);
    EXPECT_EQ(apply_recompute(model, RecomputePolicy::none()), Names{});
    EXPECT_TRUE(names_of_type(model, "RecomputeWrapper").empty());
  }
}

TEST(ActivationCheckpointing, ParameterNamesAndOrderDoNotChange) {
  Gpt plain(checkpoint_test_config());
  std::vector<std::string> expected;
  for (auto& np : plain.named_parameters()) expected.push_back(np.name);
  for (const RecomputePolicy& policy : policies_under_test()) {
    Gpt model(checkpoint_test_config());
    apply_recompute(model, policy);
    std::vector<std::string> actual;
    for (auto& np : model.named_parameters()) actual.push_back(np.name);
    EXPECT_EQ(actual, expected) << policy_label(policy);
  }
}

TEST(ActivationCheckpointing, SelectiveNeedsUnwrappedBlockChildren) {
  Gpt model(checkpoint_test_config());
  apply_recompute(model,
                  RecomputePolicy::by_name([](const std::string& name, const Module&) { return name == "h.0.mlp"; }));
  try {
    apply_recompute(model, RecomputePolicy::selective());
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("child 'mlp' to be a MLP, found RecomputeWrapper"), std::string::npos)
        << e.what();
  }
  // The refused block is left as it was, attention included.
  auto& block = dynamic_cast<TransformerBlock&>(*model.children()[1]);
  EXPECT_EQ(block.recompute(), RecomputeMode::kKeepAll);
  EXPECT_EQ(dynamic_cast<CausalSelfAttention&>(*block.children()[1]).recompute(), RecomputeMode::kKeepAll);
}

TEST(ActivationCheckpointing, ParsesTheTrainGptSpellings) {
  EXPECT_EQ(parse_recompute_policy("none").kind, RecomputePolicyKind::kNone);
  EXPECT_EQ(parse_recompute_policy("blocks").kind, RecomputePolicyKind::kByType);
  EXPECT_EQ(parse_recompute_policy("blocks").type_name, "TransformerBlock");
  EXPECT_EQ(parse_recompute_policy("selective").kind, RecomputePolicyKind::kSelective);
  const RecomputePolicy every = parse_recompute_policy("every:4");
  EXPECT_EQ(every.kind, RecomputePolicyKind::kEveryKth);
  EXPECT_EQ(every.every, 4);
  for (const char* text : {"none", "blocks", "every:4", "selective"}) {
    EXPECT_EQ(parse_recompute_policy(text).to_string(), text);
  }
  for (const char* bad : {"", "all", "Blocks", "every", "every:", "every:0", "every:-1", "every:2x", "every: 2"}) {
    try {
      parse_recompute_policy(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("'" + std::string(bad) + "'"), std::string::npos) << what;
      const bool lists_policies = what.find("none, blocks, every:K") != std::string::npos;
      const bool explains_k = what.find("whole number >= 1") != std::string::npos;
      EXPECT_TRUE(lists_policies || explains_k) << what;
    }
  }
  EXPECT_THROW(apply_recompute(*std::make_unique<Gpt>(checkpoint_test_config()), RecomputePolicy::every_kth(0)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tessera
