// recommend: bf16, largest micro-batch, then checkpointing, optimizer offload, parameter offload,
// then accumulation for the target global batch.
#include "planning/recommend.hpp"

#include <stdexcept>

#include "core/setting_error.hpp"
#include "planning/plan_report.hpp"

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
  return "micro 1 needs " + bytes(p.peak_total()) + " per rank (activations " +
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

}  // namespace

std::string Recommendation::describe() const {
  std::string s = fits ? "recommended: " + config.describe() + "\n" : "no configuration fits\n";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    s += "  " + std::to_string(i + 1) + ". " + steps[i].decision + " — " + steps[i].reason + "\n";
  }
  if (!fits) s += "  why: " + failure + "\n";
  if (fits && batch) s += "  " + batch->describe() + "\n";
  return s;
}

Recommendation recommend(const RecommendRequest& request) {
  if (request.base.device_memory <= 0) {
    throw SettingError("plan.device_memory", "(none)", "a recommendation needs the memory per rank (e.g. 80GB)");
  }
  if (!request.base.model.gpt) {
    throw std::invalid_argument("a recommendation needs an architecture (a preset or layers, dim, heads, ...), not "
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
  }

  Recommendation r;
  PlanConfig c = request.base;
  c.precision.param_dtype = DType::kBF16;
  c.precision.reduce_dtype = DType::kBF16;
  c.grad_dtype = DType::kF32;
  c.accumulation = 1;
  c.checkpointing = CheckpointPolicy::none();
  c.offload = OffloadConfig{};
  r.steps.push_back({"bf16 parameters, bf16 gradient reduce",
                     "start from bf16: stored parameters and gradient traffic take 2 bytes; master weights, Adam m, v "
                     "and gradient accumulation stay f32"});

  MemoryPlan first;
  std::int64_t micro = largest_micro(c, cap, first);
  if (micro == 0) {
    const std::string before = need_vs_budget(first);
    c.checkpointing = CheckpointPolicy::by_type("TransformerBlock");
    micro = largest_micro(c, cap, first);
    r.steps.push_back({"activation checkpointing: blocks",
                       "without it " + before + "; with every block checkpointed the blocks keep only their inputs " +
                           (micro > 0 ? "and micro " + std::to_string(micro) + " fits" : "but it is not enough")});
  }
  if (micro == 0) {
    const std::string before = need_vs_budget(first);
    c.offload.optimizer = OffloadTarget::kCpu;
    micro = largest_micro(c, cap, first);
    r.steps.push_back({"offload optimizer state to the CPU",
                       "with checkpointing " + before + "; the f32 master and the optimizer state (" +
                           bytes(first.offloaded.current_of(MemoryCategory::kOptimizerState)) +
                           " per rank) move to host memory (the engine runs this on the CPU device; GPU offload "
                           "is not built yet)"});
  }
  if (micro == 0 && c.stage != ZeroStage::kStage3) {
    const std::string before = need_vs_budget(first);
    c.stage = ZeroStage::kStage3;
    micro = largest_micro(c, cap, first);
    r.steps.push_back({"ZeRO-3 (shard parameters)",
                       "with the optimizer offloaded " + before + "; parameter offload needs sharded parameters" +
                           std::string(micro > 0 ? ", and sharding them already fits" : "")});
  }
  if (micro == 0) {
    const std::string before = need_vs_budget(first);
    c.offload.parameters = OffloadTarget::kCpu;
    micro = largest_micro(c, cap, first);
    r.steps.push_back({"offload parameters to the CPU",
                       "with ZeRO-3 and the optimizer offloaded " + before +
                           "; the parameter shard moves to host memory and units are gathered from it as they run "
                           "(the CPU device runs this; GPU offload is not built yet)"});
  }
  if (micro == 0) {
    r.config = c;
    r.plan = first;
    const MemoryCategory big = largest_category(first);
    r.failure = "even with checkpointing and optimizer and parameter offload, " + need_vs_budget(first) +
                "; the largest part is " + memory_category_name(big) + " (" + bytes(first.peak(big)) +
                "): use more ranks, a device with more memory, a shorter sequence or a smaller model";
    return r;
  }

  // Accumulation for the target global batch; the micro-batch must divide the per-rank batch.
  if (request.target_global_batch) {
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
    r.steps.push_back({"micro-batch " + std::to_string(micro), why});
    r.steps.push_back({"accumulation " + std::to_string(c.accumulation),
                       "micro " + std::to_string(micro) + " x ranks " + std::to_string(ranks) + " x accumulation " +
                           std::to_string(c.accumulation) + " = global " +
                           std::to_string(*request.target_global_batch)});
  } else {
    c.micro_batch = micro;
    r.batch = plan_batch({std::nullopt, micro, 1, ranks, c.tokens_per_sample(), kDefaultMicroBatch, request.batch_names});
    r.steps.push_back({"micro-batch " + std::to_string(micro),
                       micro == cap ? "the largest tried (--max-micro-batch " + std::to_string(cap) + ")"
                                    : "largest that fits; no target global batch, so accumulation 1"});
  }
  r.config = c;
  r.plan = plan_memory(c);
  // The step's micro-batches all exist at once: with a long accumulation their tokens may tip it over.
  while (!r.plan.fits() && c.micro_batch > 1) {
    const std::int64_t per_rank = c.micro_batch * c.accumulation;
    do {
      --c.micro_batch;
    } while (per_rank % c.micro_batch != 0);
    c.accumulation = per_rank / c.micro_batch;
    r.plan = plan_memory(c);
    r.config = c;
    r.steps.push_back({"micro-batch " + std::to_string(c.micro_batch) + " x accumulation " +
                           std::to_string(c.accumulation),
                       "the step's token buffers of every micro-batch did not fit beside the rest"});
    r.batch = plan_batch({std::nullopt, c.micro_batch, c.accumulation, ranks, c.tokens_per_sample(), kDefaultMicroBatch,
                          request.batch_names});
  }
  r.fits = r.plan.fits();
  if (!r.fits) r.failure = need_vs_budget(r.plan);
  return r;
}

}  // namespace tessera
