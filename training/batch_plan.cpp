// Global-batch planner: derive the missing one of global / micro / accumulation, or say why not.
#include "training/batch_plan.hpp"

#include <stdexcept>
#include <vector>

namespace tessera {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

void require_positive(std::int64_t value, std::string_view what, std::string_view unit) {
  if (value < 1) {
    throw std::invalid_argument(std::string(what) + " must be >= 1 " + std::string(unit) + ", got " +
                                str(value));
  }
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b, const BatchNames& names) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw std::invalid_argument("batch arithmetic overflows 64 bits: " + str(a) + " x " + str(b) + "; use smaller " +
                                names.global + " / " + names.micro + " / " + names.accumulation);
  }
  return product;
}

// "992 or 1024": the multiples of `step` either side of `value` (only the upper one below step).
std::string nearest_multiples(std::int64_t value, std::int64_t step, const BatchNames& names) {
  const std::int64_t below = value / step * step;
  const std::string above = str(checked_mul(value / step + 1, step, names));
  return below > 0 ? str(below) + " or " + above : above;
}

// "a", "a or b", "a, b or c".
std::string join_or(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

// The largest divisor of n (>= 1) that is <= cap, found in O(sqrt n).
std::int64_t largest_divisor_at_most(std::int64_t n, std::int64_t cap) {
  std::int64_t best = 1;
  for (std::int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    if (d <= cap && d > best) best = d;
    if (n / d <= cap && n / d > best) best = n / d;
  }
  return best;
}

// All three given: they must multiply out; name each single option change that would fix it.
void check_consistent(std::int64_t global, std::int64_t micro, std::int64_t accumulation, int ranks,
                      const BatchNames& names) {
  const std::int64_t product = checked_mul(checked_mul(micro, ranks, names), accumulation, names);
  if (product == global) return;
  std::vector<std::string> fixes{names.global + " " + str(product)};
  if (global % (micro * ranks) == 0) {
    fixes.push_back(names.accumulation + " " + str(global / (micro * ranks)));
  }
  if (global % (checked_mul(ranks, accumulation, names)) == 0) {
    fixes.push_back(names.micro + " " + str(global / (ranks * accumulation)));
  }
  throw std::invalid_argument("global " + str(global) + " != micro " + str(micro) + " x ranks " +
                              str(ranks) + " x accumulation " + str(accumulation) + " = " +
                              str(product) + "; change one: " + join_or(fixes) +
                              " (or leave one of the three options out to have it derived)");
}

// global / step where step = the product of the two given factors (`factors` spells them out);
// `other` names the derived value, suggested as global / step rounded down when that is >= 1.
std::int64_t divide_exactly(std::int64_t global, std::int64_t step, const std::string& factors,
                            std::string_view other, const BatchNames& names) {
  if (global % step == 0) return global / step;
  std::string message = "global " + str(global) + " is not divisible by " + factors + "; nearest valid: " +
                        nearest_multiples(global, step, names);
  if (global / step >= 1) message += ", or use " + std::string(other) + " " + str(global / step);
  throw std::invalid_argument(message);
}

}  // namespace

std::string BatchPlan::describe() const {
  return "global batch " + str(global) + " sequences = micro " + str(micro) + " x ranks " + str(ranks) +
         " x accumulation " + str(accumulation) + " (" + str(global_tokens()) +
         " tokens per step at seq_len " + str(seq_len) + ")";
}

BatchPlan plan_batch(const BatchRequest& request) {
  const int ranks = request.data_parallel_ranks;
  const BatchNames& names = request.names;
  require_positive(ranks, "data-parallel ranks", "rank");
  require_positive(request.seq_len, names.seq_len, "token");
  require_positive(request.default_micro, "the default micro-batch", "sequence");
  if (request.global) require_positive(*request.global, names.global, "sequence per step");
  if (request.micro) require_positive(*request.micro, names.micro, "sequence per rank");
  if (request.accumulation) require_positive(*request.accumulation, names.accumulation, "micro-batch per step");

  BatchPlan plan;
  plan.ranks = ranks;
  plan.seq_len = request.seq_len;
  const std::string r = "ranks " + str(ranks);
  if (request.global) {
    plan.global = *request.global;
    if (request.micro && request.accumulation) {
      check_consistent(plan.global, *request.micro, *request.accumulation, ranks, names);
      plan.micro = *request.micro;
      plan.accumulation = *request.accumulation;
    } else if (request.micro) {
      plan.micro = *request.micro;
      const std::int64_t step = checked_mul(plan.micro, ranks, names);
      plan.accumulation = divide_exactly(plan.global, step, "micro " + str(plan.micro) + " x " + r + " = " +
                                                                str(step), "accumulation", names);
    } else if (request.accumulation) {
      plan.accumulation = *request.accumulation;
      const std::int64_t step = checked_mul(ranks, plan.accumulation, names);
      plan.micro = divide_exactly(plan.global, step, r + " x accumulation " + str(plan.accumulation) + " = " +
                                                         str(step), "micro", names);
    } else {
      if (plan.global % ranks != 0) {
        throw std::invalid_argument("global " + str(plan.global) + " is not divisible by " + r +
                                    "; nearest valid: " + nearest_multiples(plan.global, ranks, names));
      }
      const std::int64_t per_rank = plan.global / ranks;
      plan.micro = largest_divisor_at_most(per_rank, request.default_micro);
      plan.accumulation = per_rank / plan.micro;
    }
  } else {
    plan.micro = request.micro.value_or(request.default_micro);
    plan.accumulation = request.accumulation.value_or(1);
    plan.global = checked_mul(checked_mul(plan.micro, ranks, names), plan.accumulation, names);
  }
  checked_mul(plan.global, plan.seq_len, names);  // global_tokens() must fit too
  return plan;
}

}  // namespace tessera
