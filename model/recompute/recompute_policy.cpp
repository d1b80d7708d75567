// apply_recompute: selects modules by policy and wraps them in place.
#include "tessera/model/recompute/recompute_policy.hpp"

#include <charconv>
#include <stdexcept>

#include "tessera/model/modules/transformer_block.hpp"
#include "tessera/model/recompute/recompute_wrapper.hpp"

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
  explicit Selector(const RecomputePolicy& policy) : policy_(policy) {}

  bool selects(const std::string& name, const Module& module) {
    switch (policy_.kind) {
      case RecomputePolicyKind::kNone: return false;
      case RecomputePolicyKind::kByType: return module.type_name() == policy_.type_name;
      case RecomputePolicyKind::kEveryKth:
        return module.type_name() == policy_.type_name && seen_of_type_++ % policy_.every == 0;
      case RecomputePolicyKind::kByName: return policy_.check_fn(name, module);
      case RecomputePolicyKind::kSelective: return dynamic_cast<const TransformerBlock*>(&module) != nullptr;
    }
    return false;
  }

 private:
  const RecomputePolicy& policy_;
  std::int64_t seen_of_type_ = 0;
};

// Pre-order over the children of `parent` (registration order, which is forward order for the
// provided models), not entering selected modules nor existing wrappers.
void collect(Module& parent, const std::string& parent_name, Selector& selector, std::vector<Target>& out) {
  for (const ModuleSlot& slot : parent.children()) {
    Module* child = slot.module.get();
    if (dynamic_cast<RecomputeWrapper*>(child) != nullptr) continue;
    const std::string name = join_module_name(parent_name, slot.name);
    if (selector.selects(name, *child)) {
      out.push_back({&parent, slot.name, name, child});
    } else {
      collect(*child, name, selector, out);
    }
  }
}

void validate(const RecomputePolicy& policy) {
  if (policy.kind == RecomputePolicyKind::kEveryKth && policy.every < 1) {
    throw std::invalid_argument("activation checkpointing every:K needs K >= 1, got " + std::to_string(policy.every));
  }
  if (policy.kind == RecomputePolicyKind::kByName && !policy.check_fn) {
    throw std::invalid_argument("activation checkpointing by_name needs a check_fn");
  }
}

}  // namespace

RecomputePolicy RecomputePolicy::none() { return {}; }

RecomputePolicy RecomputePolicy::by_type(std::string type) {
  RecomputePolicy p;
  p.kind = RecomputePolicyKind::kByType;
  p.type_name = std::move(type);
  return p;
}

RecomputePolicy RecomputePolicy::every_kth(std::int64_t k, std::string type) {
  RecomputePolicy p = by_type(std::move(type));
  p.kind = RecomputePolicyKind::kEveryKth;
  p.every = k;
  return p;
}

RecomputePolicy RecomputePolicy::by_name(CheckFn fn) {
  RecomputePolicy p;
  p.kind = RecomputePolicyKind::kByName;
  p.check_fn = std::move(fn);
  return p;
}

RecomputePolicy RecomputePolicy::selective() {
  RecomputePolicy p;
  p.kind = RecomputePolicyKind::kSelective;
  return p;
}

std::string RecomputePolicy::to_string() const {
  const bool blocks = type_name == "TransformerBlock";
  switch (kind) {
    case RecomputePolicyKind::kNone: return "none";
    case RecomputePolicyKind::kByType: return blocks ? "blocks" : "by-type:" + type_name;
    case RecomputePolicyKind::kEveryKth: return "every:" + std::to_string(every) + (blocks ? "" : " of " + type_name);
    case RecomputePolicyKind::kByName: return "by-name";
    case RecomputePolicyKind::kSelective: return "selective";
  }
  return "unknown";
}

RecomputePolicy parse_recompute_policy(const std::string& text) {
  if (text == "none") return RecomputePolicy::none();
  if (text == "blocks") return RecomputePolicy::by_type("TransformerBlock");
  if (text == "selective") return RecomputePolicy::selective();
  const std::string prefix = "every:";
  if (text.rfind(prefix, 0) == 0) {
    const char* first = text.data() + prefix.size();
    const char* last = text.data() + text.size();
    std::int64_t k = 0;
    const auto [end, error] = std::from_chars(first, last, k);
    if (error == std::errc() && end == last && first != last && k >= 1) return RecomputePolicy::every_kth(k);
    throw std::invalid_argument("activation checkpointing policy '" + text +
                                "': K in every:K must be a whole number >= 1 "
                                "(every:2 checkpoints blocks 0, 2, 4, ...)");
  }
  throw std::invalid_argument("unknown activation checkpointing policy '" + text +
                              "': use none, blocks, every:K (K >= 1: blocks 0, K, 2K, ...) or selective");
}

std::vector<std::string> apply_recompute(Module& root, const RecomputePolicy& policy) {
  validate(policy);
  std::vector<std::string> names;
  if (policy.kind == RecomputePolicyKind::kNone) return names;
  if (policy.kind == RecomputePolicyKind::kSelective) {
    if (auto* block = dynamic_cast<TransformerBlock*>(&root)) {
      block->set_recompute(RecomputeMode::kElementwise);
      return {""};
    }
  }
  Selector selector(policy);
  std::vector<Target> targets;
  collect(root, "", selector, targets);
  for (const Target& target : targets) {
    if (policy.kind == RecomputePolicyKind::kSelective) {
      static_cast<TransformerBlock&>(*target.module).set_recompute(RecomputeMode::kElementwise);
    } else {
      target.parent->wrap_child(target.slot, [](std::unique_ptr<Module> m) -> std::unique_ptr<Module> {
        return std::make_unique<RecomputeWrapper>(std::move(m));
      });
    }
    names.push_back(target.name);
  }
  return names;
}

}  // namespace tessera
