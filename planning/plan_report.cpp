// Formatting of plans, predicted timelines and planned-vs-measured tables.
#include "tessera/planning/plan_report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "tessera/planning/model_state.hpp"

namespace tessera {
namespace {

std::string printf_string(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

// The pinned host copy of the gradients through which the host updates offloaded state on a
// discrete device (the updated parameters go back through the same bytes); 0 when the device
// updates it.
std::int64_t host_update_staging(const MemoryPlan& plan) {
  const PlanConfig& k = plan.config;
  const Placement p = make_placement(k.stage, k.precision, k.offload, k.host_is_device);
  return p.update_on_host ? plan.host.current_of(MemoryCategory::kGradients) : 0;
}

// What each category holds, for the table's last column: read from the engine's Placement table.
std::string category_note(const MemoryPlan& plan, MemoryCategory c) {
  const PlanConfig& k = plan.config;
  const Placement p = make_placement(k.stage, k.precision, k.offload, k.host_is_device);
  switch (c) {
    case MemoryCategory::kParameters:
      return std::string(dtype_name(k.precision.param_dtype)) +
             (p.stored_params == Extent::kShard ? " shard" : " full copy") +
             (!plan.model_state_by_arithmetic &&
                      (k.precision.param_dtype != DType::kF32 || k.precision.compute_dtype != DType::kF32)
                  ? " (norms f32)"
                  : "") +
             (k.offload.parameters != OffloadTarget::kNone ? " (offloaded)" : "");
    case MemoryCategory::kGradients:
      return std::string(dtype_name(k.grad_dtype)) +
             (p.transient_full_grads ? " shard + full buffers of the units in backward" : " full buffer") +
             (p.transient_compute_grads ? std::string(" + ") + dtype_name(k.precision.compute_dtype) +
                                              " micro-batch gradients of the units in backward"
                                        : "");
    case MemoryCategory::kOptimizerState: {
      std::string s;
      for (const StateSpec& spec : optimizer_state_specs(k.optimizer)) s += (s.empty() ? "" : ", ") + spec.name;
      s = std::string(optimizer_kind_name(k.optimizer.kind)) + " " + s;
      return s + (p.master_is_params ? "" : " + f32 master") + (p.optimizer_range == Extent::kShard ? " (shard)" : "") +
             (k.offload.optimizer != OffloadTarget::kNone ? " (offloaded)" : "");
    }
    case MemoryCategory::kActivations:
      return plan.has_step ? std::string(dtype_name(k.precision.compute_dtype)) + ", kept for backward (" +
                                 k.recompute.to_string() + "), gradients, " + (k.model.custom ? "outputs" : "logits") +
                                 "; f32 statistics"
                           : "needs an architecture";
    case MemoryCategory::kCommBuffers: {
      if (!plan.has_step) return "needs an architecture";
      std::string s;
      if (p.gather_for_compute) s = "gathered units";
      if (k.precision.param_dtype != k.precision.compute_dtype) {
        s += std::string(s.empty() ? "" : ", ") + dtype_name(k.precision.compute_dtype) + " compute copies";
      }
      return s.empty() ? "none at this configuration" : s;
    }
    case MemoryCategory::kWorkspace: return plan.has_step ? "micro-batches, kernel scratch" : "needs an architecture";
  }
  return "";
}

// Where offloaded state of a target lives.
std::string offload_note(OffloadTarget target) {
  return target == OffloadTarget::kNvme ? "in NVMe files" : "in host memory";
}

// The tier a target's bytes are booked in.
const MemorySnapshot& tier(const MemoryPlan& plan, OffloadTarget target) {
  return target == OffloadTarget::kNvme ? plan.nvme : plan.host;
}

}  // namespace

std::string format_decimal_bytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  const std::int64_t a = std::llabs(bytes);
  if (a >= 1000000000000LL) return printf_string("%.2f TB", b / 1e12);
  if (a >= 1000000000LL) return printf_string("%.2f GB", b / 1e9);
  if (a >= 1000000LL) return printf_string("%.2f MB", b / 1e6);
  if (a >= 1000LL) return printf_string("%.2f KB", b / 1e3);
  return printf_string("%lld B", static_cast<long long>(bytes));
}

std::string format_plan(const MemoryPlan& plan) {
  const PlanConfig& k = plan.config;
  std::string out;
  out += "model   " + k.model.describe() + "\n";
  out += "config  " + k.describe() + "\n\n";
  out +=
      printf_string("%-22s %14s %14s   %s\n", "per rank", "before step", plan.has_step ? "peak in step" : "", "what");
  for (MemoryCategory c : kAllMemoryCategories) {
    out += printf_string(
        "%-22s %14s %14s   %s\n", memory_category_name(c), format_decimal_bytes(plan.before_step.current_of(c)).c_str(),
        plan.has_step ? format_decimal_bytes(plan.peak(c)).c_str() : "", category_note(plan, c).c_str());
  }
  out += printf_string("%-22s %14s %14s   %s\n", "total", format_decimal_bytes(plan.before_step.current_total).c_str(),
                       plan.has_step ? format_decimal_bytes(plan.peak_total()).c_str() : "",
                       plan.has_step ? "simultaneous peak (not the sum of the category peaks)" : "model state only");
  if (plan.judged()) {
    out += printf_string("%-22s %14s", "device memory", format_decimal_bytes(k.device_memory).c_str());
    if (k.reserved > 0) out += "  (" + format_decimal_bytes(k.reserved) + " reserved)";
    out += "\n";
    const std::int64_t need = plan.needed(), budget = plan.budget();
    if (plan.device_fits()) {
      out += printf_string("fits: yes — %s of %s (%.0f%%), %s to spare\n", format_decimal_bytes(need).c_str(),
                           format_decimal_bytes(budget).c_str(),
                           100.0 * static_cast<double>(need) / static_cast<double>(budget),
                           format_decimal_bytes(budget - need).c_str());
    } else {
      out += printf_string("fits: NO — needs %s, %s over the %s available\n", format_decimal_bytes(need).c_str(),
                           format_decimal_bytes(need - budget).c_str(), format_decimal_bytes(budget).c_str());
    }
  }
  if (!k.host_is_device && k.host_memory > 0) {
    const std::int64_t host = plan.host.peak_total;
    out += printf_string("%-22s %14s\n", "host memory", format_decimal_bytes(k.host_memory).c_str());
    if (plan.host_fits()) {
      out += printf_string("host fits: yes — %s of %s in pinned host memory, %s to spare\n",
                           format_decimal_bytes(host).c_str(), format_decimal_bytes(k.host_memory).c_str(),
                           format_decimal_bytes(k.host_memory - host).c_str());
    } else {
      out += printf_string("host fits: NO — the offloaded state needs %s of pinned host memory, %s over the %s given\n",
                           format_decimal_bytes(host).c_str(), format_decimal_bytes(host - k.host_memory).c_str(),
                           format_decimal_bytes(k.host_memory).c_str());
    }
  }
  if (!plan.has_step) {
    out +=
        "(activations, communication buffers and transients need an architecture: a preset, or layers, dim, heads, "
        "vocab and seq-len)\n";
  }
  if (k.offload.any()) {
    out += "offloaded:";
    if (k.offload.optimizer != OffloadTarget::kNone) {
      out += " optimizer state " +
             format_decimal_bytes(tier(plan, k.offload.optimizer).current_of(MemoryCategory::kOptimizerState)) + " " +
             offload_note(k.offload.optimizer);
    }
    if (k.offload.parameters != OffloadTarget::kNone) {
      out += std::string(k.offload.optimizer != OffloadTarget::kNone ? ";" : "") + " parameter shard " +
             format_decimal_bytes(tier(plan, k.offload.parameters).current_of(MemoryCategory::kParameters)) + " " +
             offload_note(k.offload.parameters);
    }
    if (const std::int64_t grads = host_update_staging(plan); grads > 0) {
      out += "; updated by the host through a pinned copy of the gradients " + format_decimal_bytes(grads) +
             " (the parameters return through the same bytes)";
    }
    if (k.offload.uses_nvme()) {
      out += "; staging buffers " + format_decimal_bytes(plan.host.current_of(MemoryCategory::kCommBuffers)) +
             " in host memory" + (k.host_is_device ? " (counted in the fit)" : "");
    }
    out += "\n";
  }
  if (plan.model_state_by_arithmetic) {
    out += "model state by the ZeRO paper's arithmetic with " + std::string(dtype_name(k.grad_dtype)) +
           " gradients (the engine accumulates gradients in f32; f32 gradients are planned by running it)\n";
  }
  // Under tensor parallelism a rank holds its group rank's pieces (and the replicated parameters):
  // the units' elements, not the model's count.
  std::int64_t psi = plan.parameter_count;
  if (k.tp_split()) {
    psi = 0;
    for (const auto& unit : plan.units) psi += unit.numel;
  }
  const ModelStateBytes formula =
      model_state_bytes(psi, k.precision, k.grad_dtype, k.stage, k.shard_ranks(), k.optimizer, k.offload);
  out += "model state, ZeRO formula " +
         model_state_formula(k.precision, k.grad_dtype, k.stage, k.optimizer, k.offload) +
         " with Ψ = " + std::to_string(psi) +
         (k.tp_split() ? " (tensor-parallel rank " + std::to_string(k.tp_rank) + "'s pieces)" : "") +
         ", N = " + std::to_string(k.shard_ranks()) + ": " + format_decimal_bytes(formula.total()) +
         " (padding each unit to a multiple of N adds " +
         format_decimal_bytes(plan.before_step.current_of(MemoryCategory::kParameters) +
                              plan.before_step.current_of(MemoryCategory::kGradients) +
                              plan.before_step.current_of(MemoryCategory::kOptimizerState) +
                              plan.host.current_of(MemoryCategory::kParameters) +
                              plan.host.current_of(MemoryCategory::kOptimizerState) +
                              plan.nvme.current_of(MemoryCategory::kParameters) +
                              plan.nvme.current_of(MemoryCategory::kOptimizerState) - formula.total()) +
         ")\n";
  if (plan.has_step) out += format_rule_of_thumb(plan);
  return out;
}

std::string format_rule_of_thumb(const MemoryPlan& plan) {
  // Model + Optimizer + max(Gradients + optimizer intermediates, Activations), on this device.
  // Tessera's optimizers update in place: their intermediates are nil.
  const std::int64_t model = plan.peak(MemoryCategory::kParameters);
  const std::int64_t optimizer = plan.peak(MemoryCategory::kOptimizerState);
  const std::int64_t gradients = plan.peak(MemoryCategory::kGradients);
  const std::int64_t activations = plan.peak(MemoryCategory::kActivations);
  const std::int64_t estimate = model + optimizer + std::max(gradients, activations);
  const std::int64_t left_out = plan.peak(MemoryCategory::kCommBuffers) + plan.peak(MemoryCategory::kWorkspace);
  const std::int64_t exact = plan.peak_total();
  const std::int64_t overlap = exact - estimate - left_out;
  std::string out = "rule of thumb: model " + format_decimal_bytes(model) + " + optimizer " +
                    format_decimal_bytes(optimizer) + " + max(gradients " + format_decimal_bytes(gradients) +
                    " + optimizer intermediates 0 B, activations " + format_decimal_bytes(activations) +
                    ") = " + format_decimal_bytes(estimate) + "; the exact simultaneous peak is " +
                    format_decimal_bytes(exact) +
                    printf_string(" (%+.0f%%): ", 100.0 * static_cast<double>(exact - estimate) /
                                                      static_cast<double>(std::max<std::int64_t>(estimate, 1)));
  out += "the rule leaves out communication buffers and workspace (" + format_decimal_bytes(left_out) + ")";
  if (overlap > 0) {
    out += ", and takes gradients and activations as peaking apart while " + format_decimal_bytes(overlap) +
           " more of them are alive together at the peak (gradients fill up during backward while activations are "
           "still held)";
  } else if (overlap < 0) {
    out += ", and the categories peak at different moments (" + format_decimal_bytes(-overlap) +
           " of their peaks are never alive at once)";
  }
  return out + "\n";
}

std::string format_activation_breakdown(const MemoryPlan& plan) {
  if (!plan.has_step) return "";
  struct Kept {
    std::string unit;
    std::int64_t bytes;
  };
  std::vector<Kept> kept;
  std::int64_t previous = -1;
  for (const MemorySample& s : plan.timeline) {
    const std::int64_t now = s.memory.current_of(MemoryCategory::kActivations);
    if (s.phase.rfind("forward ", 0) == 0 && previous >= 0) kept.push_back({s.phase.substr(8), now - previous});
    if (s.phase == "begin" || s.phase.rfind("forward ", 0) == 0) previous = now;
  }
  std::string out = "activations kept from forward to backward (micro " + std::to_string(plan.config.micro_batch) +
                    " x seq_len " + std::to_string(plan.config.tokens_per_sample()) + ", checkpointing " +
                    plan.config.recompute.to_string() + "):\n";
  for (std::size_t i = 0; i < kept.size();) {
    std::size_t j = i;
    while (j + 1 < kept.size() && kept[j + 1].bytes == kept[i].bytes) ++j;
    const std::string name = i == j ? kept[i].unit : kept[i].unit + " .. " + kept[j].unit;
    out += printf_string("  %-22s %12s%s\n", name.c_str(), format_decimal_bytes(kept[i].bytes).c_str(),
                         i == j ? "" : " each");
    i = j + 1;
  }
  return out;
}

std::string format_timeline(const std::vector<MemorySample>& timeline) {
  std::string out = printf_string("%-20s", "phase");
  for (MemoryCategory c : kAllMemoryCategories) out += printf_string(" %15.15s", memory_category_name(c));
  out += printf_string(" %13s %13s\n", "total", "phase peak");
  for (const MemorySample& s : timeline) {
    out += printf_string("%-20s", s.phase.c_str());
    for (MemoryCategory c : kAllMemoryCategories) {
      out += printf_string(" %15s", format_decimal_bytes(s.memory.current_of(c)).c_str());
    }
    out += printf_string(" %13s %13s\n", format_decimal_bytes(s.memory.current_total).c_str(),
                         format_decimal_bytes(s.memory.peak_total).c_str());
  }
  return out;
}

std::int64_t largest_difference(const MemoryPlan& plan, const MeasuredStep& measured) {
  auto distance = [](std::int64_t a, std::int64_t b) -> std::int64_t { return a > b ? a - b : b - a; };
  std::int64_t worst = distance(plan.peak_total(), measured.step.peak_total);
  for (MemoryCategory c : kAllMemoryCategories) {
    worst = std::max(worst, distance(plan.peak(c), measured.step.peak_of(c)));
    worst = std::max(worst, distance(plan.before_step.current_of(c), measured.before_step.current_of(c)));
  }
  return worst;
}

std::string format_comparison_table(const std::vector<PlanComparison>& rows) {
  std::string out = printf_string("%-8s %-22s %12s %12s %14s %14s %10s\n", "config", "peak of", "planned MiB",
                                  "measured MiB", "planned bytes", "measured bytes", "difference");
  for (const PlanComparison& r : rows) {
    auto line = [&](const char* what, std::int64_t planned, std::int64_t measured) {
      const double diff = planned == measured ? 0.0
                                              : 100.0 * static_cast<double>(planned - measured) /
                                                    static_cast<double>(std::max<std::int64_t>(measured, 1));
      out += printf_string("%-8s %-22s %12.2f %12.2f %14lld %14lld %9.2f%%\n", r.label.c_str(), what,
                           static_cast<double>(planned) / 1048576.0, static_cast<double>(measured) / 1048576.0,
                           static_cast<long long>(planned), static_cast<long long>(measured), diff);
    };
    for (MemoryCategory c : kAllMemoryCategories)
      line(memory_category_name(c), r.plan.peak(c), r.measured.step.peak_of(c));
    line("total (simultaneous)", r.plan.peak_total(), r.measured.step.peak_total);
  }
  return out;
}

}  // namespace tessera
