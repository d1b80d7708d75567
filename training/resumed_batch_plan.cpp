// plan_resumed_batch: keep the checkpoint's global batch at the new rank count, or say what would.
#include "tessera/training/resumed_batch_plan.hpp"

#include <stdexcept>
#include <vector>

#include "tessera/core/or_list.hpp"

namespace tessera {
namespace {


std::string decomposition(std::int64_t micro, std::int64_t ranks, std::int64_t accumulation) {
  return "micro " + std::to_string(micro) + " x ranks " + std::to_string(ranks) + " x accumulation " + std::to_string(accumulation);
}

std::string saved_text(const SavedBatch& s) {
  return std::to_string(s.global) + " (" + decomposition(s.micro, s.ranks, s.accumulation) + ")";
}

// "ranks 2 -> 4, micro 8 -> 4": the factors that differ from the checkpoint's; "" when none.
std::string changed_factors(const SavedBatch& s, const BatchPlan& p) {
  std::string out;
  const auto add = [&](const char* what, std::int64_t before, std::int64_t now) {
    if (before == now) return;
    if (!out.empty()) out += ", ";
    out += what;
    out += ' ';
    out += std::to_string(before);
    out += " -> ";
    out += std::to_string(now);
  };
  add("ranks", s.ranks, p.ranks);
  add("micro", s.micro, p.micro);
  add("accumulation", s.accumulation, p.accumulation);
  return out;
}

// The valid choices when the checkpoint's global batch does not divide at `ranks` with micro `micro`:
// the micro-batches nearest `micro` that keep it, then the nearest global batches that divide.
std::string choices(const SavedBatch& saved, std::int64_t micro, int ranks, const BatchNames& names) {
  const std::int64_t global = saved.global;
  std::string out;
  if (global % ranks == 0) {
    const std::int64_t per_rank = global / ranks;
    std::int64_t below = 0, above = 0;  // divisors of per_rank either side of micro
    for (std::int64_t d = 1; d <= per_rank / d; ++d) {  // every divisor pair (d, per_rank / d)
      if (per_rank % d != 0) continue;
      for (const std::int64_t v : {d, per_rank / d}) {
        if (v <= micro && v > below) below = v;
        if (v >= micro && (above == 0 || v < above)) above = v;
      }
    }
    std::vector<std::string> micros;
    for (const std::int64_t d : {below, above == below ? 0 : above}) {
      if (d == 0) continue;
      micros.push_back(names.micro + " " + std::to_string(d) + " (accumulation " + std::to_string(per_rank / d) + ")");
    }
    out = "keep " + std::to_string(global) + " with " + or_list(micros) + ", or change it with ";
  } else {
    out = "no micro-batch keeps " + std::to_string(global) + " at " + std::to_string(ranks) + " ranks (it is not a multiple of " +
          std::to_string(ranks) + "): change it with ";
  }
  // Global batches that divide: the multiples of ranks around it (micro-batch and accumulation
  // derived), and with the micro-batch kept, the multiples of micro x ranks around it.
  std::vector<std::string> globals;
  const std::int64_t low = (global - 1) / ranks * ranks, high = (global / ranks + 1) * ranks;
  if (low > 0) globals.push_back(std::to_string(low));
  globals.push_back(std::to_string(high));
  out += names.global + " " + or_list(globals);
  const std::int64_t step = micro * ranks;
  std::vector<std::string> kept_micro;
  for (const std::int64_t g : {(global - 1) / step * step, (global / step + 1) * step}) {
    if (g > 0) kept_micro.push_back(std::to_string(g));
  }
  if (!kept_micro.empty()) out += " (or " + or_list(kept_micro) + " with " + names.micro + " " + std::to_string(micro) + ")";
  return out;
}

}  // namespace

BatchChange parse_batch_change(const std::string& value, const std::string& setting) {
  if (value == "keep") return BatchChange::kKeep;
  if (value == "allow") return BatchChange::kAllow;
  throw std::invalid_argument(setting + " '" + value +
                              "': use keep (a resume keeps the checkpoint's global batch) or allow");
}

ResumedBatch plan_resumed_batch(const BatchRequest& request, const SavedBatch& saved, BatchChange change) {
  const BatchNames& names = request.names;
  const bool explicit_global = request.global || request.global_tokens;
  ResumedBatch out;
  if (explicit_global || change == BatchChange::kAllow) {
    out.plan = plan_batch(request);
    out.global_changed = out.plan.global != saved.global;
    const std::string now = decomposition(out.plan.micro, out.plan.ranks, out.plan.accumulation);
    if (out.global_changed) {
      const std::string why = explicit_global ? (request.global ? names.global + " " + std::to_string(*request.global)
                                                                : names.global_tokens + " " + std::to_string(*request.global_tokens))
                                              : names.change + " allow";
      out.line = "resume: global batch changed from " + saved_text(saved) + " to " + std::to_string(out.plan.global) + " (" +
                 now + ") by " + why;
      return out;
    }
  } else {
    BatchRequest keep = request;
    keep.global = saved.global;
    if (!keep.micro && !keep.accumulation) keep.micro = saved.micro;
    try {
      out.plan = plan_batch(keep);
    } catch (const std::invalid_argument& e) {
      const int ranks = request.data_parallel_ranks;
      const std::int64_t micro = keep.micro.value_or(saved.micro);
      // With the micro-batch alone the arithmetic is said here: the planner's own suggestion (another
      // accumulation) would change the global batch.
      const std::string why = keep.accumulation ? std::string(e.what())
                                                : "it is not divisible by micro " + std::to_string(micro) + " x ranks " +
                                                      std::to_string(ranks) + " = " + std::to_string(micro * ranks);
      throw std::invalid_argument("resume: the checkpoint's global batch " + saved_text(saved) +
                                  " is kept by default, but at " + std::to_string(ranks) + " ranks " + why + "; " +
                                  choices(saved, micro, ranks, names) + "; a new global batch needs " + names.global +
                                  " or " + names.change + " allow");
    }
  }
  const std::string diff = changed_factors(saved, out.plan);
  out.line = "resume: global batch " + std::to_string(out.plan.global) + " kept at " + std::to_string(out.plan.ranks) + " ranks: " +
             (diff.empty() ? "as saved" : diff) + " (" +
             decomposition(out.plan.micro, out.plan.ranks, out.plan.accumulation) + ")";
  return out;
}

}  // namespace tessera
