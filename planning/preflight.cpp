// Pre-flight check: plan, compare with the budget, and ask the advisor when it does not fit.
#include "tessera/planning/preflight.hpp"

#include <algorithm>
#include <stdexcept>

#include "tessera/planning/plan_report.hpp"
#include "tessera/planning/ranks_on_node.hpp"
#include "tessera/runtime/memory_tracker.hpp"

namespace tessera {

std::string PreflightCheck::predicted_text() const {
  return "predicted peak " + format_decimal_bytes(predicted) + " per rank (" + format_decimal_bytes(needed) +
         " with room for untracked memory)";
}

std::string PreflightCheck::available_text() const {
  return available < 0 ? std::string("available memory unknown")
                       : format_decimal_bytes(available) + " available (" + available_source + ")";
}

std::string PreflightCheck::summary() const { return predicted_text() + ", " + available_text(); }

std::string PreflightCheck::report() const {
  std::string s = "memory check: this run will not fit: " + summary() + ".\n\n" + format_plan(plan);
  s += '\n';
  if (recommendation) {
    s += recommendation->describe();
  } else {
    s += "the advisor cannot help: ";
    s += advisor_error;
    s += '\n';
  }
  s += "\n(the check runs before anything is allocated; --no-memory-check skips it)\n";
  return s;
}

PreflightCheck preflight_memory_check(const PlanConfig& config, const MemoryBudget& budget,
                                      const PreflightOptions& given) {
  PreflightOptions options = given;
  if (options.sharers < 0) {
    throw std::invalid_argument("PreflightOptions::sharers " + std::to_string(options.sharers) +
                                ": must be the ranks on this node (>= 1), or 0 to count them");
  }
  if (options.sharers == 0) {
    if (config.ranks > 1) {
      throw std::invalid_argument(
          "PreflightOptions::sharers is not given for a plan of " + std::to_string(config.ranks) +
          " ranks: pass the world communicator (preflight_memory_check(config, budget, world)) to count the ranks "
          "on this node, or set sharers (ranks_on_node)");
    }
    options.sharers = 1;
  }
  PreflightCheck check;
  PlanConfig planned = config;
  planned.host_is_device = options.host_memory;
  check.plan = plan_memory(planned);
  check.predicted = check.plan.needed();
  check.needed = check.predicted +
                 static_cast<std::int64_t>(static_cast<double>(check.predicted) * options.margin_fraction) +
                 options.margin_bytes;
  check.available = budget.share(options.sharers);
  check.available_source = budget.describe(options.sharers);
  check.fits = check.available < 0 || check.needed <= check.available;
  if (check.fits) return check;
  if (!config.model.gpt) {
    check.advisor_error =
        config.model.custom
            ? "it walks a GPT's settings (checkpointing its transformer blocks); for a model of your own try a "
              "smaller micro-batch with more accumulation, a higher ZeRO stage, activation checkpointing of your "
              "modules (PlanConfig::recompute) or offload, and plan each with plan_memory"
            : "a parameter count plans model state only";
    return check;
  }
  // What would fit in what there is, keeping the run's global batch.
  RecommendRequest request;
  request.base = config;
  // The same room for untracked memory: a plan of P tracked bytes needs P (1 + fraction) + bytes.
  const double usable = static_cast<double>(check.available - options.margin_bytes) / (1.0 + options.margin_fraction);
  request.base.device_memory = check.available;
  request.base.reserved = check.available - std::max<std::int64_t>(0, static_cast<std::int64_t>(usable));
  request.target_global_batch = config.micro_batch * config.ranks * config.accumulation;
  request.max_micro_batch = config.micro_batch;
  request.base.host_is_device = options.host_memory;
  request.offload_to = options.offload_to;
  check.plan.config.device_memory = check.available;
  check.plan.config.reserved = request.base.reserved;
  try {
    check.recommendation = recommend(request);
  } catch (const std::exception& e) {
    check.advisor_error = e.what();
  }
  return check;
}

PreflightCheck preflight_memory_check(const PlanConfig& config, const MemoryBudget& budget, Communicator& world,
                                      PreflightOptions options) {
  if (config.ranks != world.size()) {
    throw std::invalid_argument("the memory plan is for " + std::to_string(config.ranks) + " ranks but " +
                                std::to_string(world.size()) + " are running: set the plan's ranks to the job size");
  }
  options.sharers = ranks_on_node(world);
  return preflight_memory_check(config, budget, options);
}

}  // namespace tessera
