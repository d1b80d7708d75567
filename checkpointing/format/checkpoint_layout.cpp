// CheckpointLayout from an engine, piece lookup and the parameter comparison used on load.
#include "tessera/checkpointing/format/checkpoint_layout.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/sharding/sharded_engine.hpp"

namespace tessera {

CheckpointLayout CheckpointLayout::of_engine(ShardedEngine& engine) {
  CheckpointLayout layout;
  const Communicator* tensor = engine.tensor_parallel_group();
  layout.tp = tensor != nullptr ? tensor->size() : 1;
  const int tp_rank = tensor != nullptr ? tensor->rank() : 0;
  layout.shard_ranks = engine.shard_group().size() * layout.tp;
  layout.states = engine.state_specs();
  layout.state_alignment = optimizer_alignment(engine.config().optimizer);
  for (const auto& unit : engine.units()) {
    const int index = static_cast<int>(layout.units.size());
    layout.units.push_back({unit->name(), unit->layout().numel(), unit->layout().shard_numel(), tp_rank});
    for (const FlatEntry& e : unit->layout().entries()) {
      layout.params.push_back({e.name, e.parameter->shape, index, e.offset, e.parameter->slice});
    }
  }
  return layout;
}

void CheckpointLayout::add_tensor_parallel_rank(const CheckpointLayout& other) {
  const int first_unit = static_cast<int>(units.size());
  units.insert(units.end(), other.units.begin(), other.units.end());
  for (const ParamRecord& p : other.params) {
    if (!p.slice.split()) continue;
    ParamRecord piece = p;
    piece.unit += first_unit;
    params.push_back(std::move(piece));
  }
}

const ParamRecord* CheckpointLayout::find_param(const std::string& name) const {
  for (const ParamRecord& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<const ParamRecord*> CheckpointLayout::pieces_of(const std::string& name) const {
  std::vector<const ParamRecord*> pieces;
  for (const ParamRecord& p : params) {
    if (p.name == name) pieces.push_back(&p);
  }
  return pieces;
}

std::vector<ShardPiece> CheckpointLayout::locate(int unit, std::int64_t begin, std::int64_t end) const {
  std::vector<ShardPiece> pieces;
  const UnitRecord& record = units.at(static_cast<std::size_t>(unit));
  const std::int64_t s = record.shard_numel;
  const int first_file = record.tp_rank * shards_per_tp_rank();
  for (std::int64_t at = begin; at < end;) {
    const auto shard = static_cast<int>(at / s);
    const std::int64_t shard_end = std::min(end, (shard + 1) * s);
    pieces.push_back({first_file + shard, at - shard * s, shard_end - at});
    at = shard_end;
  }
  return pieces;
}

std::int64_t CheckpointLayout::parameter_count() const {
  std::int64_t n = 0;
  for (const ParamRecord& p : params) n += p.numel();
  return n;
}

std::int64_t CheckpointLayout::padded_elements() const {
  std::int64_t n = 0;
  for (const UnitRecord& u : units) n += u.shard_numel * shards_per_tp_rank();
  return n;
}

std::int64_t CheckpointLayout::state_bytes() const {
  std::int64_t n = 0;
  for (const StateSpec& s : states) {
    n += static_cast<std::int64_t>(dtype_size(s.dtype)) * (padded_elements() / s.elements_per_value);
  }
  return n;
}

namespace {

[[noreturn]] void corrupt_layout(const std::string& where, const std::string& problem) {
  throw CheckpointError(CheckpointErrorKind::kCorruptData,
                        where + " is corrupted: " + problem + "; resume from an earlier checkpoint");
}

std::string element_range(std::int64_t begin, std::int64_t end) {
  std::string text = "[";  // appended to, not "[" + string: GCC 12 warns falsely about the latter
  text += std::to_string(begin);
  text += ", ";
  text += std::to_string(end);
  text += ")";
  return text;
}

}  // namespace

void check_layout_structure(const CheckpointLayout& layout, const std::string& where) {
  if (layout.shard_ranks < 1) corrupt_layout(where, "it has " + std::to_string(layout.shard_ranks) + " shard files");
  if (layout.tp < 1 || layout.shard_ranks % layout.tp != 0) {
    corrupt_layout(where, "its " + std::to_string(layout.shard_ranks) + " shard files do not divide among " +
                              std::to_string(layout.tp) + " tensor-parallel ranks");
  }
  std::set<std::pair<std::string, int>> unit_names, param_names;
  for (const UnitRecord& u : layout.units) {
    if (u.tp_rank < 0 || u.tp_rank >= layout.tp) {
      corrupt_layout(where, "unit '" + u.name + "' belongs to tensor-parallel rank " + std::to_string(u.tp_rank) +
                                " of " + std::to_string(layout.tp));
    }
    if (!unit_names.insert({u.name, u.tp_rank}).second) corrupt_layout(where, "unit '" + u.name + "' is listed twice");
    if (u.numel < 0 || u.shard_numel < 0 || u.shard_numel * layout.shards_per_tp_rank() < u.numel) {
      corrupt_layout(where, "unit '" + u.name + "' has " + std::to_string(u.numel) + " elements in shards of " +
                                std::to_string(u.shard_numel) + " over " + std::to_string(layout.shards_per_tp_rank()) +
                                " shard files, which do not hold them");
    }
    if (layout.state_alignment > 1 && u.shard_numel % layout.state_alignment != 0) {
      corrupt_layout(where, "unit '" + u.name + "' has shards of " + std::to_string(u.shard_numel) +
                                " elements, not whole blocks of " + std::to_string(layout.state_alignment));
    }
  }
  // Per unit, the parameters by offset: each must end before the next begins.
  std::vector<std::vector<const ParamRecord*>> by_unit(layout.units.size());
  for (const ParamRecord& p : layout.params) {
    if (!param_names.insert({p.name, p.slice.index}).second) {
      corrupt_layout(where, "parameter '" + p.name + "' is listed twice");
    }
    if (p.slice.split() && (p.slice.parts != layout.tp || p.slice.index < 0 || p.slice.index >= p.slice.parts ||
                            p.slice.dim < 0 || static_cast<std::size_t>(p.slice.dim) >= p.shape.size() ||
                            local_extent(p.slice) != p.shape[static_cast<std::size_t>(p.slice.dim)])) {
      corrupt_layout(where, "parameter '" + p.name + "' is a piece (" + describe(p.slice) + ") that does not fit its " +
                                "shape " + shape_string(p.shape) + " or the " + std::to_string(layout.tp) +
                                " tensor-parallel ranks");
    }
    if (p.unit < 0 || static_cast<std::size_t>(p.unit) >= layout.units.size()) {
      corrupt_layout(where, "parameter '" + p.name + "' names unit " + std::to_string(p.unit) + " of " +
                                std::to_string(layout.units.size()));
    }
    for (std::int64_t d : p.shape) {
      if (d < 0) corrupt_layout(where, "parameter '" + p.name + "' has shape " + shape_string(p.shape));
    }
    const UnitRecord& unit = layout.units[static_cast<std::size_t>(p.unit)];
    if (p.offset < 0 || p.offset + p.numel() > unit.numel) {
      corrupt_layout(where, "parameter '" + p.name + "' at elements " + element_range(p.offset, p.offset + p.numel()) +
                                " lies outside its unit '" + unit.name + "' of " + std::to_string(unit.numel));
    }
    by_unit[static_cast<std::size_t>(p.unit)].push_back(&p);
  }
  for (std::size_t u = 0; u < by_unit.size(); ++u) {
    auto& params = by_unit[u];
    std::sort(params.begin(), params.end(),
              [](const ParamRecord* a, const ParamRecord* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < params.size(); ++i) {
      const ParamRecord& a = *params[i - 1];
      const ParamRecord& b = *params[i];
      if (a.offset + a.numel() > b.offset) {
        corrupt_layout(where, "parameters '" + a.name + "' " + element_range(a.offset, a.offset + a.numel()) +
                                  " and '" + b.name + "' " + element_range(b.offset, b.offset + b.numel()) +
                                  " overlap in unit '" + layout.units[u].name + "'");
      }
    }
  }
}

namespace {

std::string describe_states(const std::vector<StateSpec>& states) {
  std::string s;
  for (const StateSpec& spec : states) {
    s += (s.empty() ? "" : ", ") + spec.name + " " + dtype_name(spec.dtype);
    if (spec.elements_per_value > 1) s += " per " + std::to_string(spec.elements_per_value);
  }
  return s;
}

}  // namespace

void check_same_states(const CheckpointLayout& stored, const CheckpointLayout& current, const std::string& where) {
  // An engine without optimizer state (an inference engine) reads the master alone, which every
  // checkpoint stores first, element-wise whatever the optimizer's alignment.
  const bool master_only = current.states.size() == 1;
  bool same = master_only
                  ? !stored.states.empty()
                  : stored.states.size() == current.states.size() && stored.state_alignment == current.state_alignment;
  for (std::size_t i = 0; same && i < current.states.size(); ++i) {
    same = stored.states[i].name == current.states[i].name && stored.states[i].dtype == current.states[i].dtype &&
           stored.states[i].elements_per_value == current.states[i].elements_per_value;
  }
  if (!same) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                          where + " holds the state tensors (" + describe_states(stored.states) +
                              ") but this run's optimizer keeps (" + describe_states(current.states) +
                              "); resume with the optimizer the checkpoint was written with, or start from an export "
                              "(--init-from) with fresh optimizer state");
  }
}

void check_same_parameters(const CheckpointLayout& stored, const CheckpointLayout& current, const std::string& where) {
  // By name and whole shape: the pieces of a split parameter stand for one tensor.
  std::map<std::string, Shape> by_name;
  for (const ParamRecord& p : stored.params) by_name.emplace(p.name, p.full_shape());
  std::set<std::string> seen;
  for (const ParamRecord& p : current.params) {
    if (!seen.insert(p.name).second) continue;
    const Shape shape = p.full_shape();
    auto it = by_name.find(p.name);
    if (it == by_name.end()) {
      throw CheckpointError(
          CheckpointErrorKind::kConfigMismatch,
          where + " has no parameter '" + p.name + "' (shape " + shape_string(shape) +
              " in this model): it was written for a different model; use the model options it was written "
              "with, or start without resuming");
    }
    if (it->second != shape) {
      throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                            where + ": parameter '" + p.name + "' has shape " + shape_string(it->second) +
                                " in the checkpoint but " + shape_string(shape) +
                                " in this model; use the model options the checkpoint was written with");
    }
    by_name.erase(it);
  }
  if (!by_name.empty()) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                          where + " holds parameter '" + by_name.begin()->first + "' (shape " +
                              shape_string(by_name.begin()->second) + ") that this model does not have (" +
                              std::to_string(by_name.size()) +
                              " such parameters); use the model options the checkpoint was written with");
  }
}

std::string layout_to_json(const CheckpointLayout& layout) {
  nlohmann::json j;
  j["shard_ranks"] = layout.shard_ranks;
  j["tp"] = layout.tp;
  j["state_alignment"] = layout.state_alignment;
  for (const UnitRecord& u : layout.units) {
    j["units"].push_back(
        {{"name", u.name}, {"numel", u.numel}, {"shard_numel", u.shard_numel}, {"tp_rank", u.tp_rank}});
  }
  for (const ParamRecord& p : layout.params) {
    j["params"].push_back({{"name", p.name},
                           {"shape", p.shape},
                           {"unit", p.unit},
                           {"offset", p.offset},
                           {"dim", p.slice.dim},
                           {"parts", p.slice.parts},
                           {"index", p.slice.index},
                           {"segments", p.slice.segments}});
  }
  for (const StateSpec& s : layout.states) {
    j["states"].push_back({{"name", s.name}, {"dtype", dtype_name(s.dtype)}, {"per", s.elements_per_value}});
  }
  return j.dump();
}

CheckpointLayout layout_from_json(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    CheckpointLayout layout;
    layout.shard_ranks = j.at("shard_ranks").get<int>();
    layout.tp = j.at("tp").get<int>();
    layout.state_alignment = j.at("state_alignment").get<std::int64_t>();
    for (const auto& u : j.value("units", nlohmann::json::array())) {
      layout.units.push_back({u.at("name").get<std::string>(), u.at("numel").get<std::int64_t>(),
                              u.at("shard_numel").get<std::int64_t>(), u.at("tp_rank").get<int>()});
    }
    for (const auto& p : j.value("params", nlohmann::json::array())) {
      layout.params.push_back({p.at("name").get<std::string>(), p.at("shape").get<Shape>(), p.at("unit").get<int>(),
                               p.at("offset").get<std::int64_t>(),
                               TensorSlice{p.at("dim").get<int>(), p.at("parts").get<int>(), p.at("index").get<int>(),
                                           p.at("segments").get<std::vector<std::int64_t>>()}});
    }
    for (const auto& s : j.value("states", nlohmann::json::array())) {
      layout.states.push_back({s.at("name").get<std::string>(),
                               parse_dtype(s.at("dtype").get<std::string>(), "state dtype"),
                               s.at("per").get<std::int64_t>()});
    }
    return layout;
  } catch (const std::exception& e) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          std::string("a tensor-parallel rank's checkpoint layout could not be read: ") + e.what());
  }
}

}  // namespace tessera
