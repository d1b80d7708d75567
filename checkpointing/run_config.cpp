// RunConfig formatting and the fields of the bundled model, batch plan and LR schedule.
#include "checkpointing/run_config.hpp"

#include <cstdio>

#include "training/batch_plan.hpp"
#include "runtime/modules/gpt.hpp"
#include "runtime/optim/lr_schedule.hpp"

namespace tessera {

std::string RunConfig::format_double(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

void add_gpt_config(RunConfig& config, const GptConfig& gpt) {
  config.set_model("vocab_size", gpt.vocab_size);
  config.set_model("max_seq_len", gpt.max_seq_len);
  config.set_model("layers", gpt.layers);
  config.set_model("heads", gpt.heads);
  config.set_model("channels", gpt.channels);
}

void add_batch_plan(RunConfig& config, const BatchPlan& plan) {
  config.set_run("global_batch", plan.global);
  config.set_run("micro_batch", plan.micro);
  config.set_run("grad_accum", plan.accumulation);
  config.set_run("data_parallel_ranks", plan.ranks);
  config.set_run("seq_len", plan.seq_len);
}

void add_lr_schedule(RunConfig& config, const LrSchedule& schedule) {
  config.set_run("lr", schedule.base_lr);
  config.set_run("warmup_steps", schedule.warmup_steps);
  config.set_run("total_steps", schedule.total_steps);
  config.set_run("min_lr_ratio", schedule.min_lr_ratio);
}

}  // namespace tessera
