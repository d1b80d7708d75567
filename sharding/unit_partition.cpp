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

}  // namespace

UnitPartition partition_units(Module& model, const UnitPolicy& policy) {
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
    if (it != by_unit.end()) partition.units.push_back({u, it->second});
  }
  if (!root_params.empty()) {
    partition.root_unit = static_cast<int>(partition.units.size());
    partition.units.push_back({"<root>", root_params});
  }
  return partition;
}

std::vector<int> wrap_unit_modules(Module& model, const std::vector<std::unique_ptr<FlatParamUnit>>& units,
                                   UnitHooks& hooks) {
  std::map<const Parameter*, int> unit_of;
  std::map<std::string, int> unit_by_name;
  for (int u = 0; u < static_cast<int>(units.size()); ++u) {
    unit_by_name[units[u]->name()] = u;
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
      if (auto it = unit_by_name.find(child_name); it != unit_by_name.end()) needed.insert(it->second);
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
