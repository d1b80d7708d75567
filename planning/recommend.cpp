// recommend: bf16, ZeRO 1-2, checkpointing, ZeRO-3, offload where it runs, checkpointing to grow the
// micro-batch, then accumulation for the target global batch.
#include "tessera/planning/recommend.hpp"

#include <stdexcept>

#include "tessera/core/setting_error.hpp"
#include "tessera/planning/plan_report.hpp"

namespace tessera {
namespace {

std::string bytes(std::int64_t b) { return format_decimal_bytes(b); }

// The largest micro-batch in [1, cap] whose plan fits (0 when micro 1 does not); the plan of micro 1
// goes to `first` either way. Memory grows with the micro-batch, so doubling then bisecting works.
std::int64_t largest_micro(PlanConfig config, std::int64_t cap, MemoryPlan& first) {
  config.micro_batch = 1;
  first = plan_memory(config);
  if (!first.fits()) return 0;
  auto fits = [&](std::int64_t m) {
    config.micro_batch = m;
    return plan_memory(config).fits();
  };
  std::int64_t good = 1, bad = 0;
  while (bad == 0 && good < cap) {
    const std::int64_t next = std::min(cap, good * 2);
    if (fits(next)) {
      good = next;
    } else {
      bad = next;
    }
  }
  while (bad > good + 1) {
    const std::int64_t mid = good + (bad - good) / 2;
    (fits(mid) ? good : bad) = mid;
  }
  return good;
}

std::string need_vs_budget(const MemoryPlan& p) {
  return "micro 1 needs " + bytes(p.needed()) + " per rank (activations " +
         bytes(p.peak(MemoryCategory::kActivations)) + ", model state " +
         bytes(p.before_step.current_of(MemoryCategory::kParameters) +
               p.before_step.current_of(MemoryCategory::kGradients) +
               p.before_step.current_of(MemoryCategory::kOptimizerState)) +
         "), " + bytes(p.budget()) + " available";
}

MemoryCategory largest_category(const MemoryPlan& p) {
  MemoryCategory best = MemoryCategory::kParameters;
  for (MemoryCategory c : kAllMemoryCategories) {
    if (p.peak(c) > p.peak(best)) best = c;
  }
  return best;
}

// One move of the walk: apply `change` to the config, find the largest micro-batch, and record the
// step with the reason (`why` gets the state before the change) and the new peak of micro 1.
struct Walk {
  PlanConfig config;
  std::int64_t cap = 1;
  MemoryPlan first;  // the plan of micro 1 at the current config
  std::int64_t micro = 0;
  std::vector<RecommendStep> steps;

  void start() { micro = largest_micro(config, cap, first); }
  template <class Change>
  void take(const std::string& decision, const std::string& why, Change change) {
    const std::string before = need_vs_budget(first);
    change(config);
    micro = largest_micro(config, cap, first);
    steps.push_back({decision, why + " " + before + (micro > 0 ? "; now micro " + std::to_string(micro) + " fits" : ""),
                     first.needed()});
  }
};

}  // namespace

std::string Recommendation::describe() const {
  std::string s = fits ? "recommended: " + config.describe() + "\n" : "no configuration fits\n";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    s += "  " + std::to_string(i + 1) + ". " + steps[i].decision + " (peak " + bytes(steps[i].peak) + ") — " +
         steps[i].reason + "\n";
  }
  if (!fits) s += "  why: " + failure + "\n";
  if (fits && batch) s += "  " + batch->describe() + "\n";
  return s;
}

Recommendation recommend(const RecommendRequest& request) {
  if (request.base.device_memory <= 0) {
    throw SettingError("plan.device_memory", "(none)", "a recommendation needs the memory per rank (e.g. 80GB)");
  }
  if (request.base.model.custom) {
    throw std::invalid_argument("model '" + request.base.model.name +
                                "': the advisor walks a GPT's settings (checkpointing its transformer blocks); plan "
                                "the configurations of a model of your own with plan_memory");
  }
  if (!request.base.model.gpt) {
    throw std::invalid_argument(
        "a recommendation needs an architecture (a preset or layers, dim, heads, ...), not "
        "only a parameter count: activations decide the micro-batch");
  }
  if (request.max_micro_batch < 1) throw std::invalid_argument("the largest micro-batch to try must be >= 1");
  const int ranks = request.base.ranks;
  std::int64_t cap = request.max_micro_batch;
  if (request.target_global_batch) {
    const std::int64_t g = *request.target_global_batch;
    if (g < 1 || g % ranks != 0) {
      // The batch planner words the arithmetic and the nearest valid globals.
      plan_batch({g, std::nullopt, std::nullopt, ranks, request.base.tokens_per_sample(), kDefaultMicroBatch,
                  request.batch_names});
    }
    cap = std::min(cap, g / ranks);
    // The caller holds every micro-batch's inputs and targets (i32) through the step: the global
    // batch sets that floor whatever else is chosen.
    const std::int64_t tokens = g / ranks * request.base.tokens_per_sample() * 2 * 4;
    if (tokens >= request.base.device_memory - request.base.reserved) {
      Recommendation r;
      r.config = request.base;
      r.failure = "the step's token buffers alone (inputs and targets of the " + std::to_string(g / ranks) +
                  " sequences per rank of global batch " + std::to_string(g) + ") take " + bytes(tokens) + ", " +
                  bytes(request.base.device_memory - request.base.reserved) +
                  " available: lower the global batch or use more ranks";
      return r;
    }
  }

  Walk w;
  w.config = request.base;
  // A GPU computes in bf16 (its tensor cores; half the activation bytes); on the CPU bf16 saves memory
  // but not time, so the walk takes it there only when the memory needs it (below).
  const bool gpu = !request.base.host_is_device;
  if (gpu) w.config.precision.compute_dtype = DType::kBF16;
  w.config.precision.param_dtype = DType::kBF16;
  w.config.precision.reduce_dtype = DType::kBF16;
  w.config.grad_dtype = DType::kF32;
  w.config.accumulation = 1;
  w.config.recompute = RecomputePolicy::none();
  w.config.offload.optimizer = OffloadTarget::kNone;  // the NVMe settings (path, block) stay
  w.config.offload.parameters = OffloadTarget::kNone;
  w.cap = cap;
  w.start();
  w.steps.push_back(
      {gpu ? "bf16 compute, bf16 parameters, bf16 gradient reduce" : "bf16 parameters, bf16 gradient reduce",
       std::string("start from bf16: ") + (gpu ? "activations, their gradients, compute copies, " : "") +
           "stored parameters and gradient traffic take 2 bytes; master weights, optimizer "
           "state and gradient accumulation stay f32" +
           std::string(w.micro > 0 ? "; micro " + std::to_string(w.micro) + " fits" : ""),
       w.first.needed()});
  // Cheap stages first: sharding optimizer state and gradients adds no communication.
  for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage2}) {
    if (w.micro > 0 || zero_stage_number(w.config.stage) >= zero_stage_number(stage)) continue;
    w.take("ZeRO-" + std::to_string(zero_stage_number(stage)),
           stage == ZeroStage::kStage1 ? "shard the optimizer state (no extra communication):"
                                       : "shard the gradients too (still no extra communication):",
           [stage](PlanConfig& c) { c.stage = stage; });
  }
  if (w.micro == 0) {
    w.take("activation checkpointing: blocks", "every block keeps only its input and recomputes in backward:",
           [](PlanConfig& c) { c.recompute = RecomputePolicy::by_type("TransformerBlock"); });
  }
  if (w.micro == 0 && w.config.stage != ZeroStage::kStage3) {
    w.take("ZeRO-3 (shard parameters)",
           "gather each unit's parameters as it runs:", [](PlanConfig& c) { c.stage = ZeroStage::kStage3; });
  }
  const OffloadTarget to = request.offload_to;
  const std::string where = to == OffloadTarget::kNvme ? "NVMe files" : "host memory";
  if (w.micro == 0 && to != OffloadTarget::kNone) {
    w.take("offload optimizer state to " + where,
           "the f32 master and the optimizer state leave the device" +
               std::string(to == OffloadTarget::kNvme ? ", streamed through the step block by block:" : ":"),
           [to](PlanConfig& c) { c.offload.optimizer = to; });
  }
  if (w.micro == 0 && to != OffloadTarget::kNone) {
    w.take("offload parameters to " + where,
           "the parameter shard leaves the device and units are gathered from it as they run:", [to](PlanConfig& c) {
             c.offload.parameters = to;
           });
  }

  // On the CPU bf16 compute halves the activations but slows the step (its GEMMs widen bf16 to f32):
  // the last move, when nothing else was enough.
  if (w.micro == 0 && w.config.precision.compute_dtype != DType::kBF16) {
    w.take("bf16 compute",
           "activations and their gradients in 2 bytes (on the CPU a slower step: its GEMMs widen bf16 to f32):",
           [](PlanConfig& c) { c.precision.compute_dtype = DType::kBF16; });
  }

  Recommendation r;
  if (w.micro == 0) {
    r.config = w.config;
    r.plan = w.first;
    r.steps = w.steps;
    const MemoryCategory big = largest_category(w.first);
    r.failure = std::string(to != OffloadTarget::kNone
                                ? "even with ZeRO-3, checkpointing, optimizer and parameter offload and bf16 compute"
                                : "even with ZeRO-3, checkpointing and bf16 compute (offload, the next step, does not "
                                  "run on this target yet)") +
                ", " + need_vs_budget(w.first) + "; the largest part is " + memory_category_name(big) + " (" +
                bytes(w.first.peak(big)) +
                "): use more ranks, a device with more memory, a shorter sequence or a "
                "smaller model";
    return r;
  }

  // With a target batch to reach, recomputation that lets the micro-batch grow saves accumulation.
  if (request.target_global_batch && w.micro < cap && w.config.recompute.kind == RecomputePolicyKind::kNone) {
    PlanConfig with = w.config;
    with.recompute = RecomputePolicy::by_type("TransformerBlock");
    MemoryPlan first;
    const std::int64_t grown = largest_micro(with, cap, first);
    if (grown > w.micro) {
      const std::int64_t per_rank = *request.target_global_batch / ranks;
      w.steps.push_back({"activation checkpointing: blocks, to grow the micro-batch",
                         "micro " + std::to_string(w.micro) + " fits without it, micro " + std::to_string(grown) +
                             " with it: accumulation " + std::to_string((per_rank + w.micro - 1) / w.micro) + " -> " +
                             std::to_string((per_rank + grown - 1) / grown) + " (fewer, larger steps)",
                         first.needed()});
      w.config = with;
      w.micro = grown;
    }
  }

  PlanConfig& c = w.config;
  std::int64_t micro = w.micro;
  if (request.target_global_batch) {
    // Accumulation for the target global batch; the micro-batch must divide the per-rank batch.
    const std::int64_t per_rank = *request.target_global_batch / ranks;
    const std::int64_t fitting = micro;
    while (per_rank % micro != 0) --micro;
    c.micro_batch = micro;
    c.accumulation = per_rank / micro;
    r.batch = plan_batch({*request.target_global_batch, micro, std::nullopt, ranks, c.tokens_per_sample(),
                          kDefaultMicroBatch, request.batch_names});
    std::string why = "largest that fits";
    if (micro != fitting) {
      why = "micro " + std::to_string(fitting) + " fits but does not divide the " + std::to_string(per_rank) +
            " sequences per rank; " + std::to_string(micro) + " is the largest divisor below it";
    } else if (micro == cap && cap < request.max_micro_batch) {
      why = "the whole per-rank batch fits";
    }
    r.plan = plan_memory(c);
    w.steps.push_back({"micro-batch " + std::to_string(micro), why, r.plan.needed()});
    w.steps.push_back({"accumulation " + std::to_string(c.accumulation),
                       "micro " + std::to_string(micro) + " x ranks " + std::to_string(ranks) + " x accumulation " +
                           std::to_string(c.accumulation) + " = global " + std::to_string(*request.target_global_batch),
                       r.plan.needed()});
  } else {
    c.micro_batch = micro;
    r.batch =
        plan_batch({std::nullopt, micro, 1, ranks, c.tokens_per_sample(), kDefaultMicroBatch, request.batch_names});
    r.plan = plan_memory(c);
    w.steps.push_back({"micro-batch " + std::to_string(micro),
                       micro == cap ? "the largest tried (--max-micro-batch " + std::to_string(cap) + ")"
                                    : "largest that fits; no target global batch, so accumulation 1",
                       r.plan.needed()});
  }
  // The step's micro-batches all exist at once: with a long accumulation their tokens may tip it over.
  if (!r.plan.fits() && c.micro_batch > 1) {
    const std::int64_t per_rank = c.micro_batch * c.accumulation;
    while (!r.plan.fits() && c.micro_batch > 1) {
      do {
        --c.micro_batch;
      } while (per_rank % c.micro_batch != 0);
      c.accumulation = per_rank / c.micro_batch;
      r.plan = plan_memory(c);
    }
    w.steps.push_back(
        {"micro-batch " + std::to_string(c.micro_batch) + " x accumulation " + std::to_string(c.accumulation),
         "the step's token buffers of every micro-batch did not fit beside the rest at a larger "
         "micro-batch",
         r.plan.needed()});
    r.batch = plan_batch({std::nullopt, c.micro_batch, c.accumulation, ranks, c.tokens_per_sample(), kDefaultMicroBatch,
                          request.batch_names});
  }
  r.config = c;
  r.steps = w.steps;
  r.fits = r.plan.fits();
  if (!r.fits) r.failure = need_vs_budget(r.plan);
  return r;
}

}  // namespace tessera
