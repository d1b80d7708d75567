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

int find_unit(const CheckpointLayout& layout, const std::string& name) {
  for (std::size_t u = 0; u < layout.units.size(); ++u) {
    if (layout.units[u].name == name) return static_cast<int>(u);
  }
  return -1;
}

}  // namespace

StateReadPlan plan_reads_by_parameter(const CheckpointLayout& old,
                                      const std::vector<std::unique_ptr<FlatParamUnit>>& units) {
  StateReadPlan plan;
  for (std::size_t u = 0; u < units.size(); ++u) {
    const FlatParamUnit& unit = *units[u];
    const FlatRange range = unit.optimizer_range();
    plan.covered.push_back(std::clamp(unit.layout().numel() - range.begin, std::int64_t{0}, range.count));
    for (const FlatEntry& e : unit.layout().entries()) {
      const std::int64_t lo = std::max(range.begin, e.offset), hi = std::min(range.end(), e.offset + e.numel);
      if (lo >= hi) continue;
      const ParamRecord& record = *old.find_param(e.name);
      std::int64_t target = lo - range.begin;
      for (const ShardPiece& piece :
           old.locate(record.unit, record.offset + (lo - e.offset), record.offset + (hi - e.offset))) {
        add_run(plan.reads[piece.shard][record.unit], {piece.begin, piece.count, u, target});
        target += piece.count;
      }
    }
  }
  return plan;
}

StateReadPlan plan_reads_by_position(const CheckpointLayout& old,
                                     const std::vector<std::unique_ptr<FlatParamUnit>>& units, std::int64_t alignment,
                                     const std::string& where) {
  StateReadPlan plan;
  for (std::size_t u = 0; u < units.size(); ++u) {
    const FlatParamUnit& unit = *units[u];
    const FlatLayout& layout = unit.layout();
    const int old_unit = find_unit(old, unit.name());
    bool same = old_unit >= 0 && old.units[static_cast<std::size_t>(old_unit)].numel == layout.numel();
    for (const FlatEntry& e : layout.entries()) {
      const ParamRecord* record = same ? old.find_param(e.name) : nullptr;
      same = record != nullptr && record->unit == old_unit && record->offset == e.offset;
      if (!same) break;
    }
    if (!same) {
      throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                            where + ": its block-quantized optimizer state (blocks of " + std::to_string(alignment) +
                                ") resumes only into the same units, and unit '" + unit.name() +
                                "' differs (other parameters or offsets); resume with the unit policy it was saved "
                                "with, or start from an export (--init-from) with fresh optimizer state");
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
