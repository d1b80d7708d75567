// train_gpt's spellings of library settings, and plans as train_gpt command lines.
#include "flags/train_gpt_flags.hpp"

#include <filesystem>

#include "flags/program_path.hpp"

namespace tessera {

const SettingNames& train_gpt_setting_names() {
  static const SettingNames names{{"sharding.stage", "--zero"},
                                  {"sharding.hybrid_group", "--hybrid-group"},
                                  {"parallel.tp", "--tp"},
                                  {"parallel.sequence_parallel", "--sequence-parallel"},
                                  {"comm.collectives", "--collectives"},
                                  {"sharding.prefetch_units", "--prefetch"},
                                  {"sharding.reshard_after_forward", "--reshard-after-forward"},
                                  {"sharding.grad_clip", "--grad-clip"},
                                  {"sharding.offload.optimizer", "--offload-optimizer"},
                                  {"sharding.offload.parameters", "--offload-params"},
                                  {"offload.path", "--offload-path"},
                                  {"offload.block", "--offload-block"},
                                  {"offload.buffers", "--offload-buffers"},
                                  {"offload.queue_depth", "--offload-queue-depth"},
                                  {"offload.io", "--offload-io"},
                                  {"precision.param_dtype", "--param-dtype"},
                                  {"precision.compute_dtype", "--compute-dtype"},
                                  {"precision.reduce_dtype", "--reduce-dtype"},
                                  {"model.vocab_size", "--vocab"},
                                  {"model.seq_len", "--seq-len"},
                                  {"model.layers", "--layers"},
                                  {"model.heads", "--heads"},
                                  {"model.channels", "--dim"},
                                  {"model.architecture", "--model"},
                                  {"model.kv_heads", "--kv-heads"},
                                  {"model.ffn_dim", "--ffn-dim"},
                                  {"model.rope_theta", "--rope-theta"},
                                  {"optimizer.kind", "--optimizer"},
                                  {"optimizer.block_size", "--optimizer-block"},
                                  {"batch.global", "--global-batch"},
                                  {"batch.micro", "--micro-batch"},
                                  {"batch.accumulation", "--grad-accum"},
                                  {"batch.global_tokens", "--global-batch-tokens"},
                                  {"batch.change", "--batch-change"},
                                  {"eval.batches", "--eval-batches"},
                                  {"eval.micro", "--micro-batch"},
                                  {"recompute.policy", "--activation-checkpointing"},
                                  {"checkpoint.dir", "--checkpoint-dir"},
                                  {"checkpoint.save_every", "--save-every"},
                                  {"checkpoint.keep_last", "--keep-last"},
                                  {"checkpoint.compression", "--checkpoint-compression"},
                                  {"checkpoint.resume", "--resume"},
                                  {"checkpoint.overwrite", "--overwrite"},
                                  {"run.steps", "--steps"},
                                  {"run.seed", "--seed"},
                                  {"run.log_every", "--log-every"},
                                  {"run.eval_every", "--eval-every"},
                                  {"run.tensorboard_dir", "--tensorboard"},
                                  {"run.max_skipped_steps", "--max-skipped-steps"},
                                  {"run.spike_guard", "--spike-guard"},
                                  {"run.check_replicas", "--check-replicas"},
                                  {"spike.window", "--spike-window"},
                                  {"spike.z", "--spike-z"},
                                  {"schedule.lr", "--lr"},
                                  {"schedule.warmup", "--warmup"}};
  return names;
}

BatchNames train_gpt_batch_names() {
  return {"--global-batch", "--micro-batch", "--grad-accum", "--seq-len", "--global-batch-tokens", "--batch-change"};
}

std::string train_gpt_command(const PlanConfig& config, const CommandInputs& inputs) {
  std::string s = config.ranks > 1 ? "mpirun -np " + std::to_string(config.ranks) + " " : "";
  s += shell_word(sibling_program("train_gpt"));
  if (!inputs.data.empty()) {
    s += " --data ";
    s += shell_word(std::filesystem::absolute(inputs.data).lexically_normal().string());
  }
  if (!inputs.device.empty()) {
    s += " --device ";
    s += shell_word(inputs.device);
  }
  const SettingNames& names = train_gpt_setting_names();
  for (const PlanSetting& p : config.training_settings()) {
    s += ' ';  // appended piece by piece: GCC 12 warns falsely about " " + string
    s += names.flag_of(p.setting);
    s += ' ';
    s += shell_word(p.value);
  }
  return s;
}

}  // namespace tessera
