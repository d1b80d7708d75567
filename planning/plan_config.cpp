// PlanConfig validation, description and its engine settings; offload parsing.
#include "tessera/planning/plan_config.hpp"

#include <sstream>

#include "tessera/core/number_text.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/training/losses/token_cross_entropy.hpp"

namespace tessera {

OffloadConfig parse_offload(const std::string& text) {
  OffloadConfig o;
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
      throw SettingError("plan.offload", text, "unknown target '" + where + "' in '" + item + "' (use cpu or nvme)");
    }
    if (what == "optimizer") {
      o.optimizer = target;
    } else if (what == "params" || what == "parameters") {
      o.parameters = target;
    } else {
      throw SettingError("plan.offload", text,
                         "unknown state '" + what +
                             "': use none, or a comma-separated list of optimizer[:cpu|:nvme] "
                             "and params[:cpu|:nvme]");
    }
  }
  return o;
}

int PlanConfig::shard_ranks() const {
  if (stage != ZeroStage::kStage0 && hybrid_group > 0 && hybrid_group < ranks) return hybrid_group;
  return ranks;
}

PlanConfig PlanConfig::for_run(ModelSpec model, const ShardingConfig& sharding, const BatchPlan& batch,
                               const RecomputePolicy& recompute) {
  PlanConfig c;
  c.model = std::move(model);
  c.precision = sharding.precision;
  c.optimizer = sharding.optimizer;
  c.stage = sharding.stage;
  c.hybrid_group = sharding.hybrid_group;
  c.offload = sharding.offload;
  c.prefetch_units = sharding.prefetch_units;
  c.reshard_after_forward = sharding.reshard_after_forward;
  c.unit_policy = sharding.unit_policy;
  c.recompute = recompute;
  c.ranks = batch.ranks;
  c.set_batch(batch);
  return c;
}

void PlanConfig::set_batch(const BatchPlan& batch) {
  if (batch.ranks != ranks) {
    throw SettingError("plan.ranks", std::to_string(ranks),
                       "the batch plan (" + batch.sequences_text() + ") is for " + std::to_string(batch.ranks) +
                           " ranks but the memory plan is for " + std::to_string(ranks) + " ranks" +
                           ": plan the batch for the run's ranks (BatchRequest::data_parallel_ranks) or set the "
                           "plan's ranks to the batch's");
  }
  micro_batch = batch.micro;
  accumulation = batch.accumulation;
  if (model.gpt) seq_len = batch.seq_len;
}

std::unique_ptr<Module> PlanConfig::build_model(std::shared_ptr<TensorParallel> tp) const {
  std::unique_ptr<Module> m;
  if (tp_split() && !tp) throw std::invalid_argument("PlanConfig::build_model: a tensor-parallel plan needs its group");
  if (model.gpt) {
    m = std::make_unique<Gpt>(*model.gpt, tp_split() ? std::move(tp) : nullptr);
  } else if (model.custom && model.custom->build) {
    m = model.custom->build();
    if (!m) throw std::invalid_argument("model '" + model.name + "': CustomModel::build returned no module");
  } else {
    throw std::invalid_argument("model '" + model.name +
                                "' is only a parameter count: a step needs an architecture or a model of your own");
  }
  apply_recompute(*m, recompute);  // before an engine wraps the units
  return m;
}

std::vector<BatchTensorSpec> PlanConfig::batch_tensors() const {
  if (model.gpt) return token_batch(tokens_per_sample(), model.gpt->vocab_size);
  if (model.custom) return model.custom->batch;
  throw std::invalid_argument("model '" + model.name + "' is only a parameter count: it has no micro-batch");
}

PlanStepFunction PlanConfig::step_function(std::shared_ptr<const TensorParallel> tp) const {
  if (model.custom && model.custom->step) return model.custom->step;
  if (!model.plans_step()) {
    throw std::invalid_argument("model '" + model.name + "' is only a parameter count: it has no training step");
  }
  if (tp_split() && tp && model.gpt)
    return trainer_step(std::make_shared<TokenCrossEntropy>(tp, model.gpt->vocab_size));
  return trainer_step(model.custom ? model.custom->loss : nullptr);
}

std::int64_t PlanConfig::tokens_per_sample() const {
  if (seq_len > 0) return seq_len;
  return model.gpt ? model.gpt->max_seq_len : 0;
}

void PlanConfig::validate() const {
  precision.validate();
  optimizer.validate();
  if (!is_floating(grad_dtype))
    throw SettingError("plan.grad_dtype", dtype_name(grad_dtype), "must be f32, bf16 or f16");
  if (grad_dtype != DType::kF32 && model.plans_step()) {
    throw SettingError("plan.grad_dtype", dtype_name(grad_dtype),
                       "the engine accumulates gradients in f32; 2-byte gradients (the ZeRO paper's accounting) are "
                       "planned as arithmetic for a model given by its parameter count only");
  }
  if (ranks < 1) throw SettingError("plan.ranks", std::to_string(ranks), "must be >= 1");
  if (tp < 1) throw SettingError("parallel.tp", std::to_string(tp), "must be >= 1");
  if (tp_rank < 0 || tp_rank >= tp) {
    throw SettingError("plan.tp_rank", std::to_string(tp_rank),
                       "must be a rank of the tensor-parallel group, 0 .. tp-1");
  }
  if (tp > 1 && (model.custom || !model.gpt) && model.plans_step()) {
    throw SettingError("parallel.tp", std::to_string(tp), "splits the GPT's layers; a model of your own is not split");
  }
  if (hybrid_group < 0 || (hybrid_group > 0 && ranks % hybrid_group != 0)) {
    throw SettingError("sharding.hybrid_group", std::to_string(hybrid_group),
                       "must divide the number of ranks " + std::to_string(ranks));
  }
  if (micro_batch < 1) throw SettingError("batch.micro", std::to_string(micro_batch), "must be >= 1");
  if (accumulation < 1) throw SettingError("batch.accumulation", std::to_string(accumulation), "must be >= 1");
  if (prefetch_units < 0) throw SettingError("sharding.prefetch_units", std::to_string(prefetch_units), "must be >= 0");
  if (device_memory < 0) throw SettingError("plan.device_memory", std::to_string(device_memory), "must be >= 0");
  if (reserved < 0) throw SettingError("plan.reserved", std::to_string(reserved), "must be >= 0");
  if (model.gpt && model.custom) {
    throw std::invalid_argument("model '" + model.name + "': give a GPT architecture or a model of your own, not both");
  }
  if (model.custom) {
    validate_custom_model(*model.custom, model.name);
  } else if (model.gpt) {
    model.gpt->validate();
    if (seq_len < 0 || seq_len > model.gpt->max_seq_len) {
      throw SettingError("model.seq_len", std::to_string(seq_len),
                         "must be between 1 and the model's " + std::to_string(model.gpt->max_seq_len));
    }
  } else if (model.raw_parameters <= 0) {
    throw std::invalid_argument(
        "give a model: a preset, an architecture (layers, dim, heads, vocab, seq-len) or a "
        "parameter count");
  }
  if (offload.parameters != OffloadTarget::kNone && stage != ZeroStage::kStage3) {
    throw SettingError("sharding.offload.parameters", offload_target_name(offload.parameters),
                       "parameter offload needs ZeRO stage 3: at stages 0-2 every rank computes on its full stored "
                       "parameters, so they cannot leave the device");
  }
}

std::string PlanConfig::describe() const {
  std::string s = "ZeRO-" + std::to_string(zero_stage_number(stage)) + " on " + std::to_string(ranks) +
                  (ranks == 1 ? " rank" : " ranks");
  if (shard_ranks() != ranks) s += " (shard groups of " + std::to_string(shard_ranks()) + ")";
  s += std::string(", compute ") + dtype_name(precision.compute_dtype) + ", param " +
       dtype_name(precision.param_dtype) + ", reduce " + dtype_name(precision.reduce_dtype) + ", grads " +
       dtype_name(grad_dtype) + ", " + optimizer_kind_name(optimizer.kind);
  s += ", micro " + std::to_string(micro_batch) + " x accumulation " + std::to_string(accumulation);
  if (model.gpt) s += " at seq_len " + std::to_string(tokens_per_sample());
  s += ", checkpointing " + recompute.to_string() + ", offload " + offload.to_string();
  if (stage == ZeroStage::kStage3 && prefetch_units != 1) s += ", prefetch " + std::to_string(prefetch_units);
  if (stage == ZeroStage::kStage3 && !reshard_after_forward) s += ", keep params after forward";
  if (tp_split()) {
    s += ", tensor parallel " + std::to_string(tp) + " (rank " + std::to_string(tp_rank) + ", sequence parallel " +
         (sequence_parallel ? "on" : "off") + ")";
  }
  return s;
}

ShardingConfig PlanConfig::sharding_config() const {
  ShardingConfig c;
  c.stage = stage;
  c.precision = precision;
  c.hybrid_group = hybrid_group;
  c.prefetch_units = prefetch_units;
  c.reshard_after_forward = reshard_after_forward;
  c.optimizer = optimizer;
  c.offload = offload;
  c.unit_policy = unit_policy;
  return c;
}

std::vector<PlanSetting> PlanConfig::training_settings() const {
  std::vector<PlanSetting> out;
  if (model.gpt) {
    const GptConfig& g = *model.gpt;
    if (tp_split()) {
      out.push_back({"parallel.tp", std::to_string(tp)});
      out.push_back({"parallel.sequence_parallel", sequence_parallel ? "on" : "off"});
    }
    out.push_back({"model.layers", std::to_string(g.layers)});
    out.push_back({"model.channels", std::to_string(g.channels)});
    out.push_back({"model.heads", std::to_string(g.heads)});
    out.push_back({"model.vocab_size", std::to_string(g.vocab_size)});
    out.push_back({"model.seq_len", std::to_string(tokens_per_sample())});
    if (g.is_llama()) {
      out.push_back({"model.architecture", gpt_architecture_name(g.architecture)});
      out.push_back({"model.kv_heads", std::to_string(g.key_value_heads())});
      out.push_back({"model.ffn_dim", std::to_string(g.mlp_hidden())});
      out.push_back({"model.rope_theta", shortest_number_text(g.rope_theta)});
    }
  }
  out.push_back({"sharding.stage", std::to_string(zero_stage_number(stage))});
  if (hybrid_group > 0) out.push_back({"sharding.hybrid_group", std::to_string(hybrid_group)});
  out.push_back({"precision.compute_dtype", dtype_name(precision.compute_dtype)});
  out.push_back({"precision.param_dtype", dtype_name(precision.param_dtype)});
  out.push_back({"precision.reduce_dtype", dtype_name(precision.reduce_dtype)});
  if (optimizer.kind != OptimizerKind::kAdamW) out.push_back({"optimizer.kind", optimizer_kind_name(optimizer.kind)});
  out.push_back({"batch.micro", std::to_string(micro_batch)});
  out.push_back({"batch.accumulation", std::to_string(accumulation)});
  if (recompute.kind != RecomputePolicyKind::kNone) out.push_back({"recompute.policy", recompute.to_string()});
  if (offload.optimizer != OffloadTarget::kNone) {
    out.push_back({"sharding.offload.optimizer", offload_target_name(offload.optimizer)});
  }
  if (offload.parameters != OffloadTarget::kNone) {
    out.push_back({"sharding.offload.parameters", offload_target_name(offload.parameters)});
  }
  if (offload.uses_nvme()) out.push_back({"offload.path", offload.nvme.path.empty() ? "DIR" : offload.nvme.path});
  if (prefetch_units != 1) out.push_back({"sharding.prefetch_units", std::to_string(prefetch_units)});
  if (!reshard_after_forward) out.push_back({"sharding.reshard_after_forward", "false"});
  return out;
}

}  // namespace tessera
