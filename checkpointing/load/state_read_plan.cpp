// Read plans by parameter name and by flat position.
#include "tessera/checkpointing/load/state_read_plan.hpp"

#include <algorithm>

#include "tessera/checkpointing/format/checkpoint_error.hpp"

namespace tessera {
namespace {

// Appends a run, merging it into the previous one when contiguous in both layouts (one read).
void add_run(std::vector<StateRequest>& runs, const StateRequest& r) {
  StateRequest* last = runs.empty() ? nullptr : &runs.back();
  if (last != nullptr && last->unit == r.unit && last->begin + last->count == r.begin &&
      last->target + last->count == r.target) {
    last->count += r.count;
  } else {
    runs.push_back(r);
  }
}

// The unit of that name of tensor-parallel rank `tp_rank` in a layout of `tp` ranks (-1: none).
int find_unit(const CheckpointLayout& layout, const std::string& name, int tp_rank, int tp) {
  if (layout.tp != tp) return -1;
  for (std::size_t u = 0; u < layout.units.size(); ++u) {
    if (layout.units[u].name == name && layout.units[u].tp_rank == tp_rank) return static_cast<int>(u);
  }
  return -1;
}

}  // namespace

namespace {

// A run of a stored record's elements that is consecutive in the whole tensor.
struct GlobalRun {
  std::int64_t global = 0, local = 0, count = 0;
};

// The runs of every stored record of a parameter, ordered by their place in the whole tensor.
struct StoredRuns {
  std::vector<std::pair<const ParamRecord*, GlobalRun>> runs;
};

StoredRuns stored_runs(const CheckpointLayout& old, const std::string& name) {
  StoredRuns out;
  for (const ParamRecord* record : old.pieces_of(name)) {
    for_each_global_run(record->shape, record->slice, 0, record->numel(),
                        [&](std::int64_t global, std::int64_t local, std::int64_t count) {
                          out.runs.push_back({record, {global, local, count}});
                        });
  }
  std::sort(out.runs.begin(), out.runs.end(),
            [](const auto& a, const auto& b) { return a.second.global < b.second.global; });
  return out;
}

}  // namespace

StateReadPlan plan_reads_by_parameter(const CheckpointLayout& old,
                                      const std::vector<std::unique_ptr<FlatParamUnit>>& units) {
  StateReadPlan plan;
  std::map<std::string, StoredRuns> stored;  // per parameter name, made once
  for (std::size_t u = 0; u < units.size(); ++u) {
    const FlatParamUnit& unit = *units[u];
    const FlatRange range = unit.optimizer_range();
    plan.covered.push_back(std::clamp(unit.layout().numel() - range.begin, std::int64_t{0}, range.count));
    for (const FlatEntry& e : unit.layout().entries()) {
      const std::int64_t lo = std::max(range.begin, e.offset), hi = std::min(range.end(), e.offset + e.numel);
      if (lo >= hi) continue;
      auto found = stored.find(e.name);
      if (found == stored.end()) found = stored.emplace(e.name, stored_runs(old, e.name)).first;
      const auto& runs = found->second.runs;
      // Each run of this rank's elements [lo, hi) in the whole tensor, read from the stored pieces
      // that hold it (one piece when neither side is split: the stored record itself).
      for_each_global_run(e.parameter->shape, e.parameter->slice, lo - e.offset, hi - lo,
                          [&](std::int64_t global, std::int64_t local, std::int64_t count) {
                            auto it =
                                std::upper_bound(runs.begin(), runs.end(), global,
                                                 [](std::int64_t g, const auto& r) { return g < r.second.global; });
                            if (it != runs.begin()) --it;
                            for (; it != runs.end() && it->second.global < global + count; ++it) {
                              const GlobalRun& r = it->second;
                              const std::int64_t a = std::max(global, r.global);
                              const std::int64_t b = std::min(global + count, r.global + r.count);
                              if (a >= b) continue;
                              const ParamRecord& record = *it->first;
                              const std::int64_t from = record.offset + r.local + (a - r.global);
                              std::int64_t target = e.offset + local + (a - global) - range.begin;
                              for (const ShardPiece& piece : old.locate(record.unit, from, from + (b - a))) {
                                add_run(plan.reads[piece.shard][record.unit], {piece.begin, piece.count, u, target});
                                target += piece.count;
                              }
                            }
                          });
    }
  }
  return plan;
}

StateReadPlan plan_reads_by_position(const CheckpointLayout& old,
                                     const std::vector<std::unique_ptr<FlatParamUnit>>& units, std::int64_t alignment,
                                     const std::string& where, int tp_rank, int tp) {
  StateReadPlan plan;
  for (std::size_t u = 0; u < units.size(); ++u) {
    const FlatParamUnit& unit = *units[u];
    const FlatLayout& layout = unit.layout();
    const int old_unit = find_unit(old, unit.name(), tp_rank, tp);
    bool same = old_unit >= 0 && old.units[static_cast<std::size_t>(old_unit)].numel == layout.numel();
    for (const FlatEntry& e : layout.entries()) {
      const ParamRecord* record = nullptr;
      for (const ParamRecord* piece : same ? old.pieces_of(e.name) : std::vector<const ParamRecord*>{}) {
        if (piece->unit == old_unit) record = piece;
      }
      // Group ranks > 0 keep their replicated parameters at the offsets group rank 0 lists them.
      if (record == nullptr && same && !e.parameter->slice.split()) record = old.find_param(e.name);
      same = record != nullptr && record->offset == e.offset && record->shape == e.parameter->shape;
      if (!same) break;
    }
    if (!same) {
      throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                            where + ": its block-quantized optimizer state (blocks of " + std::to_string(alignment) +
                                ") resumes only into the same units, and unit '" + unit.name() +
                                "' differs (other parameters or offsets, or another tensor-parallel size: saved with " +
                                std::to_string(old.tp) + ", resuming with " + std::to_string(tp) +
                                "); resume with the unit policy, tensor-parallel size and compute and parameter "
                                "dtypes it was saved with (with bf16, a unit's norm parameters are a unit of their "
                                "own), or start "
                                "from an export (--init-from) with fresh optimizer state");
    }
    const FlatRange range = unit.optimizer_range();
    const std::int64_t stored = (layout.numel() + alignment - 1) / alignment * alignment;  // whole blocks
    const std::int64_t limit = std::min(range.end(), stored);
    plan.covered.push_back(std::max<std::int64_t>(0, limit - range.begin));
    if (range.begin >= limit) continue;
    std::int64_t target = 0;
    for (const ShardPiece& piece : old.locate(old_unit, range.begin, limit)) {
      add_run(plan.reads[piece.shard][old_unit], {piece.begin, piece.count, u, target});
      target += piece.count;
    }
  }
  return plan;
}

}  // namespace tessera
