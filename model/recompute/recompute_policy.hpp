// Activation checkpointing policies and apply_recompute, which applies one to a model
// in place (as FSDP's apply_recompute with a check_fn): the selected modules are
// wrapped in a RecomputeWrapper through their parent's wrap_child, or — for the selective policy —
// switched to RecomputeMode::kElementwise. Apply it before a sharding engine wraps the units, so the
// wrapper sits inside the unit and the recompute runs under the unit's backward gather.
//
// Policies (the train_gpt spelling in quotes):
//   none()                "none"       nothing changes
//   by_type(type)         "blocks"     every module whose type_name() is `type` ("TransformerBlock")
//   every_kth(k, type)    "every:K"    the 0th, k-th, 2k-th ... module of `type`, in forward order
//   by_name(check_fn)                  every module for which check_fn(full name, module) is true
//   selective()           "selective"  every TransformerBlock recomputes its element-wise ops only
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/model/module.hpp"

namespace tessera {

enum class RecomputePolicyKind { kNone, kByType, kEveryKth, kByName, kSelective };

struct RecomputePolicy {
  using CheckFn = std::function<bool(const std::string& name, const Module& module)>;

  RecomputePolicyKind kind = RecomputePolicyKind::kNone;
  std::string type_name = "TransformerBlock";  // kByType, kEveryKth: which modules are candidates
  std::int64_t every = 1;                      // kEveryKth: k >= 1
  CheckFn check_fn;                            // kByName

  static RecomputePolicy none();
  static RecomputePolicy by_type(std::string type_name = "TransformerBlock");
  static RecomputePolicy every_kth(std::int64_t k, std::string type_name = "TransformerBlock");
  static RecomputePolicy by_name(CheckFn check_fn);
  static RecomputePolicy selective();

  // "none", "blocks", "every:2", "by-type:LmHead", "by-name", "selective".
  std::string to_string() const;
};

// Parses "none", "blocks", "every:K" (K >= 1) or "selective". Throws std::invalid_argument listing
// the accepted spellings for anything else.
RecomputePolicy parse_recompute_policy(const std::string& text);

// Applies `policy` to the modules below `root` and returns the full names of the modules it wrapped
// (or, for selective(), switched to element-wise recomputation), in forward order.
// - The walk does not enter a selected module (nested selections are covered by the outer wrapper)
//   nor an existing RecomputeWrapper, so applying a policy twice wraps nothing twice.
// - `root` itself is never wrapped (it has no parent slot): wrap it directly if needed. selective()
//   does switch a root TransformerBlock.
// Parameters are untouched: names, storage and order stay as they were.
std::vector<std::string> apply_recompute(Module& root, const RecomputePolicy& policy);

}  // namespace tessera
