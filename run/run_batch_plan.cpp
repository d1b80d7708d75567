// plan_run_batch: plan_batch, or plan_resumed_batch against the checkpoint a resume will load.
#include "tessera/run/run_batch_plan.hpp"

#include <charconv>

#include "tessera/checkpointing/resume_target.hpp"

namespace tessera {
namespace {

std::optional<std::int64_t> field(const std::map<std::string, std::string>& fields, const std::string& key) {
  const auto it = fields.find(key);
  if (it == fields.end()) return std::nullopt;
  std::int64_t value = 0;
  const char* end = it->second.data() + it->second.size();
  const auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  if (ec != std::errc() || ptr != end || value < 1) return std::nullopt;
  return value;
}

}  // namespace

std::optional<SavedBatch> saved_batch_of(const std::map<std::string, std::string>& run_fields) {
  const auto global = field(run_fields, "global_batch"), micro = field(run_fields, "micro_batch"),
             accumulation = field(run_fields, "grad_accum"), ranks = field(run_fields, "data_parallel_ranks");
  if (!global || !micro || !accumulation || !ranks) return std::nullopt;
  return SavedBatch{*global, *micro, *accumulation, static_cast<int>(*ranks)};
}

ResumedBatch plan_run_batch(const BatchRequest& request, const CheckpointOptions& checkpoint, BatchChange change,
                            Communicator& world) {
  std::optional<SavedBatch> saved;
  if (const auto target = find_resume_target(checkpoint, world)) {
    saved = saved_batch_of(read_saved_run_fields(*target, world));
  }
  if (!saved) return ResumedBatch{plan_batch(request), false, ""};
  return plan_resumed_batch(request, *saved, change);
}

}  // namespace tessera
