// PlanConfig validation and description; offload and optimizer parsing.
#include "planning/plan_config.hpp"

#include <sstream>
#include <stdexcept>

namespace tessera {

const char* offload_target_name(OffloadTarget target) {
  switch (target) {
    case OffloadTarget::kNone: return "none";
    case OffloadTarget::kCpu: return "cpu";
    case OffloadTarget::kNvme: return "nvme";
  }
  return "?";
}

std::string PlanOffload::to_string() const {
  if (!any()) return "none";
  std::string s;
  if (optimizer != OffloadTarget::kNone) s.append("optimizer:").append(offload_target_name(optimizer));
  if (parameters != OffloadTarget::kNone) {
    if (!s.empty()) s += ",";
    s.append("params:").append(offload_target_name(parameters));
  }
  return s;
}

PlanOffload parse_offload(const std::string& text) {
  PlanOffload o;
  if (text == "none" || text.empty()) return o;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto colon = item.find(':');
    const std::string what = item.substr(0, colon);
    const std::string where = colon == std::string::npos ? "cpu" : item.substr(colon + 1);
    OffloadTarget target;
    if (where == "cpu") {
      target = OffloadTarget::kCpu;
    } else if (where == "nvme") {
      target = OffloadTarget::kNvme;
    } else {
      throw std::invalid_argument("--offload: unknown target '" + where + "' in '" + item + "' (use cpu or nvme)");
    }
    if (what == "optimizer") {
      o.optimizer = target;
    } else if (what == "params" || what == "parameters") {
      o.parameters = target;
    } else {
      throw std::invalid_argument("--offload: unknown state '" + what + "' in '" + text +
                                  "': use none, or a comma-separated list of optimizer[:cpu|:nvme] and "
                                  "params[:cpu|:nvme]");
    }
  }
  return o;
}

OptimizerKind parse_optimizer(const std::string& text) {
  if (text == "adamw" || text == "adam") return OptimizerKind::kAdamW;
  throw std::invalid_argument("--optimizer '" + text + "': Tessera has AdamW only (use adamw)");
}

const char* optimizer_name(OptimizerKind) { return "AdamW"; }

int PlanConfig::shard_ranks() const {
  if (stage != ZeroStage::kStage0 && hybrid_group > 0 && hybrid_group < ranks) return hybrid_group;
  return ranks;
}

std::int64_t PlanConfig::tokens_per_sample() const {
  if (seq_len > 0) return seq_len;
  return model.gpt ? model.gpt->max_seq_len : 0;
}

void PlanConfig::validate() const {
  precision.validate();
  if (!is_floating(grad_dtype)) throw std::invalid_argument("--grad-dtype must be f32, bf16 or f16");
  if (ranks < 1) throw std::invalid_argument("--ranks must be >= 1, got " + std::to_string(ranks));
  if (hybrid_group < 0 || (hybrid_group > 0 && ranks % hybrid_group != 0)) {
    throw std::invalid_argument("--hybrid-group " + std::to_string(hybrid_group) + " must divide --ranks " +
                                std::to_string(ranks));
  }
  if (micro_batch < 1) throw std::invalid_argument("--micro-batch must be >= 1, got " + std::to_string(micro_batch));
  if (accumulation < 1) throw std::invalid_argument("--grad-accum must be >= 1, got " + std::to_string(accumulation));
  if (prefetch_units < 0) throw std::invalid_argument("--prefetch must be >= 0");
  if (device_memory < 0 || reserved < 0) throw std::invalid_argument("--device-memory and --reserve must be >= 0");
  if (model.gpt) {
    model.gpt->validate();
    if (seq_len < 0 || seq_len > model.gpt->max_seq_len) {
      throw std::invalid_argument("--seq-len " + std::to_string(seq_len) + " must be between 1 and the model's " +
                                  std::to_string(model.gpt->max_seq_len));
    }
  } else if (model.raw_parameters <= 0) {
    throw std::invalid_argument("give a model: --model PRESET, --layers/--dim/--heads/--vocab/--seq-len, or --params N");
  }
  if (offload.parameters != OffloadTarget::kNone && stage != ZeroStage::kStage3) {
    throw std::invalid_argument("--offload params needs --zero 3: at stages 0-2 every rank computes on its full "
                                "stored parameters, so they cannot leave the device");
  }
  if (checkpointing.kind == CheckpointPolicyKind::kByName) {
    throw std::invalid_argument("--activation-checkpointing: the planner models none, blocks, every:K and selective");
  }
}

std::string PlanConfig::describe() const {
  std::string s = "ZeRO-" + std::to_string(zero_stage_number(stage)) + " on " + std::to_string(ranks) +
                  (ranks == 1 ? " rank" : " ranks");
  if (shard_ranks() != ranks) s += " (shard groups of " + std::to_string(shard_ranks()) + ")";
  s += std::string(", param ") + dtype_name(precision.param_dtype) + ", reduce " + dtype_name(precision.reduce_dtype) +
       ", grads " + dtype_name(grad_dtype) + ", " + optimizer_name(optimizer);
  s += ", micro " + std::to_string(micro_batch) + " x accumulation " + std::to_string(accumulation);
  if (model.gpt) s += " at seq_len " + std::to_string(tokens_per_sample());
  s += ", checkpointing " + checkpointing.to_string() + ", offload " + offload.to_string();
  if (stage == ZeroStage::kStage3 && prefetch_units != 1) s += ", prefetch " + std::to_string(prefetch_units);
  if (stage == ZeroStage::kStage3 && !reshard_after_forward) s += ", keep params after forward";
  return s;
}

}  // namespace tessera
