// How a model is cut into sharding units, and where the wrappers go.
//
// partition_units: the unit modules are the policy's choice (FSDP's auto-wrap policy) or, without
// a policy, the root's direct children; each parameter belongs to the innermost unit module
// containing it, parameters under no unit module form the root unit ("<root>", last). Unit
// modules owning no parameter (a tied LM head) form no unit. With `f32_apart` (a run whose compute
// or stored parameters are not f32), the parameters marked Parameter::keep_f32 (norm gains and
// biases) of each unit form a unit of their own beside it, "<unit> (f32)", gathered and reduced
// with it around the same module but stored, computed and updated in f32.
//
// wrap_unit_modules: every module that is a unit, or uses a tied parameter of one, is replaced in
// its parent's slot by a ShardedUnitModule naming the units it needs; returns, per unit, how many
// wrapped modules use it (a unit's gradients are complete once all of them ran their backward).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/model/module.hpp"
#include "tessera/sharding/flat_param_unit.hpp"
#include "tessera/sharding/sharding_config.hpp"
#include "tessera/sharding/unit_hooks.hpp"

namespace tessera {

struct UnitParameters {
  std::string name;    // the unit module's full name or "<root>", with " (f32)" for an f32 unit
  std::string module;  // the unit module's full name, or "<root>"
  bool f32 = false;    // the keep_f32 parameters of `module`, apart
  std::vector<NamedParameter> parameters;
};

struct UnitPartition {
  std::vector<UnitParameters> units;
  std::vector<int> root_units;  // indices of the root's units ("<root>" and "<root> (f32)"), if any
};

UnitPartition partition_units(Module& model, const UnitPolicy& policy, bool f32_apart = false);

// `units` are built from `partition`, in its order. Throws std::invalid_argument when a module uses
// a tied parameter that belongs to no unit.
std::vector<int> wrap_unit_modules(Module& model, const UnitPartition& partition,
                                   const std::vector<std::unique_ptr<FlatParamUnit>>& units, UnitHooks& hooks);

}  // namespace tessera
