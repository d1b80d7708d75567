// apply_activation_checkpointing on the tiny GPT: every policy (all blocks, every 2nd block, by
// name, selective) gives gradients and training steps bit-identical to the unwrapped model's,
// selects the modules it says, leaves parameter names alone, and parse_checkpoint_policy accepts
// exactly the train_gpt spellings.
#include "runtime/recompute/activation_checkpointing.hpp"

#include <gtest/gtest.h>

#include "recompute_test_support.hpp"
#include "runtime/recompute/checkpoint_wrapper.hpp"
#include "runtime/local_trainer.hpp"
#include "runtime/modules/causal_self_attention.hpp"
#include "runtime/modules/transformer_block.hpp"

namespace tessera {
namespace {

using testing::checkpoint_test_config;
using testing::expect_bit_identical;
using testing::forward_backward;
using testing::gradients_of;
using testing::make_model;
using testing::random_tokens;

std::vector<CheckpointPolicy> policies_under_test() {
  return {CheckpointPolicy::by_type("TransformerBlock"), CheckpointPolicy::every_kth(2), CheckpointPolicy::selective(),
          CheckpointPolicy::by_name([](const std::string& name, const Module&) {
            return name == "h.1" || name == "h.3.mlp" || name == "head";
          })};
}

std::string policy_label(const CheckpointPolicy& p) {
  return p.kind == CheckpointPolicyKind::kByName ? "by-name(h.1, h.3.mlp, head)" : p.to_string();
}

TEST(ActivationCheckpointing, GradientsAreBitIdenticalToTheUnwrappedModel) {
  auto device = make_cpu_device();
  const auto batch = random_tokens(*device, checkpoint_test_config(), 2, 8, 9);
  auto plain = make_model(*device, CheckpointPolicy::none());
  const float expected_loss = forward_backward(*plain, *device, batch);
  const auto expected = gradients_of(*plain);
  for (const CheckpointPolicy& policy : policies_under_test()) {
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
  auto run = [](const CheckpointPolicy& policy) {
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
  const auto [expected_losses, expected_values] = run(CheckpointPolicy::none());
  for (const CheckpointPolicy& policy : policies_under_test()) {
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
    EXPECT_EQ(apply_activation_checkpointing(model, CheckpointPolicy::by_type("TransformerBlock")),
              (Names{"h.0", "h.1", "h.2", "h.3", "h.4"}));
    EXPECT_EQ(names_of_type(model, "CheckpointWrapper"), (Names{"h.0", "h.1", "h.2", "h.3", "h.4"}));
    // Applying again wraps nothing twice.
    EXPECT_EQ(apply_activation_checkpointing(model, CheckpointPolicy::by_type("TransformerBlock")), Names{});
    EXPECT_EQ(names_of_type(model, "CheckpointWrapper").size(), 5u);
  }
  {
    Gpt model(config);
    EXPECT_EQ(apply_activation_checkpointing(model, CheckpointPolicy::every_kth(2)), (Names{"h.0", "h.2", "h.4"}));
    EXPECT_EQ(names_of_type(model, "CheckpointWrapper"), (Names{"h.0", "h.2", "h.4"}));
  }
  {
    Gpt model(config);
    EXPECT_EQ(apply_activation_checkpointing(model, parse_checkpoint_policy("every:3")), (Names{"h.0", "h.3"}));
  }
  {
    Gpt model(config);
    EXPECT_EQ(apply_activation_checkpointing(model, CheckpointPolicy::by_type("LayerNorm")),
              (Names{"h.0.ln_1", "h.0.ln_2", "h.1.ln_1", "h.1.ln_2", "h.2.ln_1", "h.2.ln_2", "h.3.ln_1", "h.3.ln_2",
                     "h.4.ln_1", "h.4.ln_2", "ln_f"}));
  }
  {
    Gpt model(config);
    EXPECT_EQ(apply_activation_checkpointing(model, CheckpointPolicy::selective()),
              (Names{"h.0", "h.1", "h.2", "h.3", "h.4"}));
    EXPECT_TRUE(names_of_type(model, "CheckpointWrapper").empty()) << "selective wraps nothing";
    for (auto& nm : model.named_modules()) {
      if (auto* block = dynamic_cast<TransformerBlock*>(nm.module)) {
        EXPECT_EQ(block->recompute(), RecomputeMode::kElementwise) << nm.name;
      }
    }
  }
  {
    Gpt model(config);
    EXPECT_EQ(apply_activation_checkpointing(model, CheckpointPolicy::none()), Names{});
    EXPECT_TRUE(names_of_type(model, "CheckpointWrapper").empty());
  }
}

TEST(ActivationCheckpointing, ParameterNamesAndOrderDoNotChange) {
  Gpt plain(checkpoint_test_config());
  std::vector<std::string> expected;
  for (auto& np : plain.named_parameters()) expected.push_back(np.name);
  for (const CheckpointPolicy& policy : policies_under_test()) {
    Gpt model(checkpoint_test_config());
    apply_activation_checkpointing(model, policy);
    std::vector<std::string> actual;
    for (auto& np : model.named_parameters()) actual.push_back(np.name);
    EXPECT_EQ(actual, expected) << policy_label(policy);
  }
}

TEST(ActivationCheckpointing, SelectiveNeedsUnwrappedBlockChildren) {
  Gpt model(checkpoint_test_config());
  apply_activation_checkpointing(model, CheckpointPolicy::by_name([](const std::string& name, const Module&) {
                                   return name == "h.0.mlp";
                                 }));
  try {
    apply_activation_checkpointing(model, CheckpointPolicy::selective());
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("child 'mlp' to be a MLP, found CheckpointWrapper"), std::string::npos)
        << e.what();
  }
  // The refused block is left as it was, attention included.
  auto& block = dynamic_cast<TransformerBlock&>(*model.children()[1]);
  EXPECT_EQ(block.recompute(), RecomputeMode::kKeepAll);
  EXPECT_EQ(dynamic_cast<CausalSelfAttention&>(*block.children()[1]).recompute(), RecomputeMode::kKeepAll);
}

TEST(ActivationCheckpointing, ParsesTheTrainGptSpellings) {
  EXPECT_EQ(parse_checkpoint_policy("none").kind, CheckpointPolicyKind::kNone);
  EXPECT_EQ(parse_checkpoint_policy("blocks").kind, CheckpointPolicyKind::kByType);
  EXPECT_EQ(parse_checkpoint_policy("blocks").type_name, "TransformerBlock");
  EXPECT_EQ(parse_checkpoint_policy("selective").kind, CheckpointPolicyKind::kSelective);
  const CheckpointPolicy every = parse_checkpoint_policy("every:4");
  EXPECT_EQ(every.kind, CheckpointPolicyKind::kEveryKth);
  EXPECT_EQ(every.every, 4);
  for (const char* text : {"none", "blocks", "every:4", "selective"}) {
    EXPECT_EQ(parse_checkpoint_policy(text).to_string(), text);
  }
  for (const char* bad : {"", "all", "Blocks", "every", "every:", "every:0", "every:-1", "every:2x", "every: 2"}) {
    try {
      parse_checkpoint_policy(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("'" + std::string(bad) + "'"), std::string::npos) << what;
      const bool lists_policies = what.find("none, blocks, every:K") != std::string::npos;
      const bool explains_k = what.find("whole number >= 1") != std::string::npos;
      EXPECT_TRUE(lists_policies || explains_k) << what;
    }
  }
  EXPECT_THROW(apply_activation_checkpointing(*std::make_unique<Gpt>(checkpoint_test_config()),
                                              CheckpointPolicy::every_kth(0)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tessera
