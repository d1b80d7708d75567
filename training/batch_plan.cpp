// Global-batch planner: derive the missing one of global / micro / accumulation, or say why not.
#include "tessera/training/batch_plan.hpp"

#include <stdexcept>
#include <vector>

#include "tessera/core/or_list.hpp"

namespace tessera {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

void require_positive(std::int64_t value, std::string_view what, std::string_view unit) {
  if (value < 1) {
    throw std::invalid_argument(std::string(what) + " must be >= 1 " + std::string(unit) + ", got " + str(value));
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
  throw std::invalid_argument("global " + str(global) + " != micro " + str(micro) + " x ranks " + str(ranks) +
                              " x accumulation " + str(accumulation) + " = " + str(product) + "; change one: " +
                              or_list(fixes) + " (or leave one of the three options out to have it derived)");
}

// global / step where step = the product of the two given factors (`factors` spells them out);
// `other` names the derived value, suggested as global / step rounded down when that is >= 1.
std::int64_t divide_exactly(std::int64_t global, std::int64_t step, const std::string& factors, std::string_view other,
                            const BatchNames& names) {
  if (global % step == 0) return global / step;
  std::string message = "global " + str(global) + " is not divisible by " + factors +
                        "; nearest valid: " + nearest_multiples(global, step, names);
  if (global / step >= 1) message += ", or use " + std::string(other) + " " + str(global / step);
  throw std::invalid_argument(message);
}

// "3840000 (accumulation 15) or 4096000 (accumulation 16)": the global token counts either side of
// `global` sequences that are whole multiples of `step` sequences, with the value each multiple gives.
std::string nearest_token_counts(std::int64_t global, std::int64_t step, std::int64_t seq_len, std::string_view derived,
                                 const BatchNames& names) {
  std::vector<std::string> items;
  for (const std::int64_t k : {global / step, global / step + 1}) {
    if (k < 1) continue;
    std::string item = str(checked_mul(checked_mul(k, step, names), seq_len, names));
    if (!derived.empty()) item += " (" + std::string(derived) + " " + str(k) + ")";
    items.push_back(item);
  }
  return or_list(items);
}

// The token path's arithmetic: `global` sequences (from global_tokens) must split into the given
// factors, or the error speaks in tokens. When it returns, the sequence path cannot fail to divide.
void check_tokens_fit(const BatchRequest& r, std::int64_t global) {
  const BatchNames& names = r.names;
  const std::int64_t tokens = *r.global_tokens, seq_len = r.seq_len;
  const int ranks = r.data_parallel_ranks;
  std::int64_t step = ranks;
  std::string factors = "ranks " + str(ranks);
  if (r.micro) {
    step = checked_mul(step, *r.micro, names);
    factors = "micro " + str(*r.micro) + " x " + factors;
  }
  if (r.accumulation) {
    step = checked_mul(step, *r.accumulation, names);
    factors += " x accumulation " + str(*r.accumulation);
  }
  const std::string head = "global " + str(tokens) + " tokens (" + str(global) + " sequences of " + str(seq_len) + ")";
  const std::string step_tokens = str(checked_mul(step, seq_len, names));
  if (r.micro && r.accumulation) {
    if (step == global) return;
    std::vector<std::string> fixes{names.global_tokens + " " + step_tokens};
    if (global % (*r.micro * ranks) == 0) fixes.push_back(names.accumulation + " " + str(global / (*r.micro * ranks)));
    if (global % (checked_mul(ranks, *r.accumulation, names)) == 0) {
      fixes.push_back(names.micro + " " + str(global / (ranks * *r.accumulation)));
    }
    throw std::invalid_argument(head + " != " + factors + " = " + str(step) + " sequences = " + step_tokens +
                                " tokens; change one: " + or_list(fixes) +
                                " (or leave one of the three options out to have it derived)");
  }
  if (global % step == 0) return;
  const std::string derived = r.micro ? "accumulation" : r.accumulation ? "micro" : "";
  std::string message = head + " is not divisible by " + factors + " = " + str(step) + " sequences = " + step_tokens +
                        " tokens; nearest valid: " + nearest_token_counts(global, step, seq_len, derived, names) +
                        " tokens";
  if (global % ranks == 0 && (r.micro || r.accumulation)) {
    // Keep the token count: the largest micro-batch (or accumulation) up to the given one that
    // divides the sequences per rank.
    const std::int64_t per_rank = global / ranks;
    const std::int64_t kept = largest_divisor_at_most(per_rank, r.micro ? *r.micro : *r.accumulation);
    message += ", or keep " + str(tokens) + " with " +
               (r.micro ? names.micro + " " + str(kept) + " (accumulation " + str(per_rank / kept) + ")"
                        : names.accumulation + " " + str(kept) + " (micro " + str(per_rank / kept) + ")");
  }
  throw std::invalid_argument(message);
}

}  // namespace

std::int64_t sequences_in_tokens(std::int64_t global_tokens, std::int64_t seq_len, const BatchNames& names) {
  require_positive(global_tokens, names.global_tokens, "token per step");
  require_positive(seq_len, names.seq_len, "token");
  if (global_tokens % seq_len == 0) return global_tokens / seq_len;
  throw std::invalid_argument(names.global_tokens + " " + str(global_tokens) + " is not a multiple of " +
                              names.seq_len + " " + str(seq_len) +
                              "; nearest valid: " + nearest_multiples(global_tokens, seq_len, names));
}

std::string BatchPlan::sequences_text() const {
  return "global batch " + str(global) + " sequences = micro " + str(micro) + " x ranks " + str(ranks) +
         " x accumulation " + str(accumulation);
}

std::string BatchPlan::tokens_text() const {
  return str(global_tokens()) + " tokens per step at seq_len " + str(seq_len);
}

std::string BatchPlan::describe() const { return sequences_text() + " (" + tokens_text() + ")"; }

BatchPlan plan_batch(const BatchRequest& request) {
  if (request.global_tokens) {
    if (request.global) {
      throw std::invalid_argument("give " + request.names.global + " (sequences) or " + request.names.global_tokens +
                                  " (tokens), not both");
    }
    require_positive(request.data_parallel_ranks, "data-parallel ranks", "rank");
    if (request.micro) require_positive(*request.micro, request.names.micro, "sequence per rank");
    if (request.accumulation) {
      require_positive(*request.accumulation, request.names.accumulation, "micro-batch per step");
    }
    BatchRequest in_sequences = request;
    in_sequences.global = sequences_in_tokens(*request.global_tokens, request.seq_len, request.names);
    in_sequences.global_tokens.reset();
    check_tokens_fit(request, *in_sequences.global);
    return plan_batch(in_sequences);
  }
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
      plan.accumulation = divide_exactly(plan.global, step, "micro " + str(plan.micro) + " x " + r + " = " + str(step),
                                         "accumulation", names);
    } else if (request.accumulation) {
      plan.accumulation = *request.accumulation;
      const std::int64_t step = checked_mul(ranks, plan.accumulation, names);
      plan.micro = divide_exactly(plan.global, step,
                                  r + " x accumulation " + str(plan.accumulation) + " = " + str(step), "micro", names);
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
