// apply_activation_checkpointing: selects modules by policy and wraps them in place.
#include "runtime/recompute/activation_checkpointing.hpp"

#include <charconv>
#include <stdexcept>

#include "runtime/recompute/checkpoint_wrapper.hpp"
#include "runtime/modules/transformer_block.hpp"

namespace tessera {
namespace {

struct Target {
  Module* parent;
  std::string slot;  // the child's slot name inside parent
  std::string name;  // full dotted name
  Module* module;
};

class Selector {
 public:
  explicit Selector(const CheckpointPolicy& policy) : policy_(policy) {}

  bool selects(const std::string& name, const Module& module) {
    switch (policy_.kind) {
      case CheckpointPolicyKind::kNone: return false;
      case CheckpointPolicyKind::kByType: return module.type_name() == policy_.type_name;
      case CheckpointPolicyKind::kEveryKth:
        return module.type_name() == policy_.type_name && seen_of_type_++ % policy_.every == 0;
      case CheckpointPolicyKind::kByName: return policy_.check_fn(name, module);
      case CheckpointPolicyKind::kSelective: return dynamic_cast<const TransformerBlock*>(&module) != nullptr;
    }
    return false;
  }

 private:
  const CheckpointPolicy& policy_;
  std::int64_t seen_of_type_ = 0;
};

// Pre-order over the children of `parent` (registration order, which is forward order for the
// provided models), not entering selected modules nor existing wrappers.
void collect(Module& parent, const std::string& parent_name, Selector& selector, std::vector<Target>& out) {
  for (const ModuleSlot& slot : parent.children()) {
    Module* child = slot.module.get();
    if (dynamic_cast<CheckpointWrapper*>(child) != nullptr) continue;
    const std::string name = join_module_name(parent_name, slot.name);
    if (selector.selects(name, *child)) {
      out.push_back({&parent, slot.name, name, child});
    } else {
      collect(*child, name, selector, out);
    }
  }
}

void validate(const CheckpointPolicy& policy) {
  if (policy.kind == CheckpointPolicyKind::kEveryKth && policy.every < 1) {
    throw std::invalid_argument("activation checkpointing every:K needs K >= 1, got " + std::to_string(policy.every));
  }
  if (policy.kind == CheckpointPolicyKind::kByName && !policy.check_fn) {
    throw std::invalid_argument("activation checkpointing by_name needs a check_fn");
  }
}

}  // namespace

CheckpointPolicy CheckpointPolicy::none() { return {}; }

CheckpointPolicy CheckpointPolicy::by_type(std::string type) {
  CheckpointPolicy p;
  p.kind = CheckpointPolicyKind::kByType;
  p.type_name = std::move(type);
  return p;
}

CheckpointPolicy CheckpointPolicy::every_kth(std::int64_t k, std::string type) {
  CheckpointPolicy p = by_type(std::move(type));
  p.kind = CheckpointPolicyKind::kEveryKth;
  p.every = k;
  return p;
}

CheckpointPolicy CheckpointPolicy::by_name(CheckFn fn) {
  CheckpointPolicy p;
  p.kind = CheckpointPolicyKind::kByName;
  p.check_fn = std::move(fn);
  return p;
}

CheckpointPolicy CheckpointPolicy::selective() {
  CheckpointPolicy p;
  p.kind = CheckpointPolicyKind::kSelective;
  return p;
}

std::string CheckpointPolicy::to_string() const {
  const bool blocks = type_name == "TransformerBlock";
  switch (kind) {
    case CheckpointPolicyKind::kNone: return "none";
    case CheckpointPolicyKind::kByType: return blocks ? "blocks" : "by-type:" + type_name;
    case CheckpointPolicyKind::kEveryKth:
      return "every:" + std::to_string(every) + (blocks ? "" : " of " + type_name);
    case CheckpointPolicyKind::kByName: return "by-name";
    case CheckpointPolicyKind::kSelective: return "selective";
  }
  return "unknown";
}

CheckpointPolicy parse_checkpoint_policy(const std::string& text) {
  if (text == "none") return CheckpointPolicy::none();
  if (text == "blocks") return CheckpointPolicy::by_type("TransformerBlock");
  if (text == "selective") return CheckpointPolicy::selective();
  const std::string prefix = "every:";
  if (text.rfind(prefix, 0) == 0) {
    const char* first = text.data() + prefix.size();
    const char* last = text.data() + text.size();
    std::int64_t k = 0;
    const auto [end, error] = std::from_chars(first, last, k);
    if (error == std::errc() && end == last && first != last && k >= 1) return CheckpointPolicy::every_kth(k);
    throw std::invalid_argument("activation checkpointing policy '" + text +
                                "': K in every:K must be a whole number >= 1 "
                                "(every:2 checkpoints blocks 0, 2, 4, ...)");
  }
  throw std::invalid_argument("unknown activation checkpointing policy '" + text +
                              "': use none, blocks, every:K (K >= 1: blocks 0, K, 2K, ...) or selective");
}

std::vector<std::string> apply_activation_checkpointing(Module& root, const CheckpointPolicy& policy) {
  validate(policy);
  std::vector<std::string> names;
  if (policy.kind == CheckpointPolicyKind::kNone) return names;
  if (policy.kind == CheckpointPolicyKind::kSelective) {
    if (auto* block = dynamic_cast<TransformerBlock*>(&root)) {
      block->set_recompute(RecomputeMode::kElementwise);
      return {""};
    }
  }
  Selector selector(policy);
  std::vector<Target> targets;
  collect(root, "", selector, targets);
  for (const Target& target : targets) {
    if (policy.kind == CheckpointPolicyKind::kSelective) {
      static_cast<TransformerBlock&>(*target.module).set_recompute(RecomputeMode::kElementwise);
    } else {
      target.parent->wrap_child(target.slot, [](std::unique_ptr<Module> m) -> std::unique_ptr<Module> {
        return std::make_unique<CheckpointWrapper>(std::move(m));
      });
    }
    names.push_back(target.name);
  }
  return names;
}

}  // namespace tessera
