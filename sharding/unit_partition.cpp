// Unit partition by policy, and wrapping of the modules that use units.
#include "tessera/sharding/unit_partition.hpp"

#include <map>
#include <set>
#include <stdexcept>

#include "tessera/sharding/sharded_unit_module.hpp"

namespace tessera {
namespace {

bool has_prefix(const std::string& name, const std::string& prefix) {
  return name == prefix ||
         (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '.');
}

// Appends the unit of `module` holding `parameters` and, with f32_apart, its keep_f32 ones as a unit
// of their own after it; returns how many units were added.
int add_units(UnitPartition& partition, const std::string& module, const std::vector<NamedParameter>& parameters,
              bool f32_apart) {
  std::vector<NamedParameter> main, f32;
  for (const NamedParameter& np : parameters) (f32_apart && np.parameter->keep_f32 ? f32 : main).push_back(np);
  int added = 0;
  if (!main.empty()) {
    partition.units.push_back({module, module, false, std::move(main)});
    ++added;
  }
  if (!f32.empty()) {
    partition.units.push_back({module + " (f32)", module, true, std::move(f32)});
    ++added;
  }
  return added;
}

}  // namespace

UnitPartition partition_units(Module& model, const UnitPolicy& policy, bool f32_apart) {
  std::vector<std::string> unit_names;
  if (policy) {
    for (const NamedModule& nm : model.named_modules()) {
      if (!nm.name.empty() && policy(nm.name, *nm.module)) unit_names.push_back(nm.name);
    }
  } else {
    for (const ModuleSlot& slot : model.children()) unit_names.push_back(slot.name);
  }
  std::map<std::string, std::vector<NamedParameter>> by_unit;
  std::vector<NamedParameter> root_params;
  for (const NamedParameter& np : model.named_parameters()) {
    const std::string* owner = nullptr;
    for (const std::string& u : unit_names) {
      if (has_prefix(np.name, u) && (owner == nullptr || u.size() > owner->size())) owner = &u;
    }
    (owner ? by_unit[*owner] : root_params).push_back(np);
  }
  UnitPartition partition;
  for (const std::string& u : unit_names) {
    auto it = by_unit.find(u);
    if (it != by_unit.end()) add_units(partition, u, it->second, f32_apart);
  }
  const int first_root = static_cast<int>(partition.units.size());
  const int roots = add_units(partition, "<root>", root_params, f32_apart);
  for (int r = 0; r < roots; ++r) partition.root_units.push_back(first_root + r);
  return partition;
}

std::vector<int> wrap_unit_modules(Module& model, const UnitPartition& partition,
                                   const std::vector<std::unique_ptr<FlatParamUnit>>& units, UnitHooks& hooks) {
  std::map<const Parameter*, int> unit_of;
  std::multimap<std::string, int> units_of_module;
  for (int u = 0; u < static_cast<int>(units.size()); ++u) {
    units_of_module.emplace(partition.units[static_cast<std::size_t>(u)].module, u);
    for (const FlatEntry& e : units[u]->layout().entries()) unit_of[e.parameter] = u;
  }
  std::vector<int> users(units.size(), 0);
  for (const NamedModule& nm : model.named_modules()) {
    Module* parent = nm.module;
    for (const ModuleSlot& slot : parent->children()) {
      // A wrapper's inner module (an empty slot name) goes under its wrapper's name: the wrapper
      // is the one to wrap, or the inner module would be gathered and reduced twice.
      if (slot.name.empty()) continue;
      const std::string child_name = join_module_name(nm.name, slot.name);
      std::set<int> needed;
      for (auto [it, end] = units_of_module.equal_range(child_name); it != end; ++it) needed.insert(it->second);
      for (Parameter* p : slot.module->tied_parameters()) {
        auto it = unit_of.find(p);
        if (it == unit_of.end()) {
          throw std::invalid_argument("sharding: " + child_name + " uses a tied parameter '" + p->name +
                                      "' that is not part of the model");
        }
        needed.insert(it->second);
      }
      if (needed.empty()) continue;
      UnitUse use{std::vector<int>(needed.begin(), needed.end()), child_name};
      for (int u : use.units) ++users[u];
      parent->wrap_child(slot.name, [&](std::unique_ptr<Module> inner) {
        return std::make_unique<ShardedUnitModule>(std::move(inner), hooks, use);
      });
    }
  }
  return users;
}

}  // namespace tessera
