// Checkpoint description and full verification.
#include "tessera/checkpointing/format/checkpoint_info.hpp"

#include <memory>
#include <set>
#include <sstream>

#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/environment_report.hpp"
#include "tessera/checkpointing/format/health_mark.hpp"
#include "tessera/checkpointing/format/meta_digests.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/load/shard_file_reader.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"
#include "tessera/runtime/memory_tracker.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

fs::path resolve_or_throw(const fs::path& path) {
  const auto dir = resolve_checkpoint(path);
  if (!dir) throw CheckpointError(CheckpointErrorKind::kMissingFile, "no checkpoint found at " + path.string());
  return *dir;
}

}  // namespace

std::string describe_checkpoint(const fs::path& path) {
  const fs::path dir = resolve_or_throw(path);
  const CheckpointMeta meta = read_meta_file((dir / kMetaFileName).string());
  check_shard_files(meta, dir);
  std::int64_t file_bytes = static_cast<std::int64_t>(fs::file_size(dir / kMetaFileName));
  for (std::int64_t b : meta.shard_file_bytes) file_bytes += b;
  const std::int64_t state_bytes = meta.layout.state_bytes();
  std::string states;
  for (const StateSpec& spec : meta.layout.states) {
    states += (states.empty() ? "" : ", ") + spec.name + " " + dtype_name(spec.dtype);
  }

  std::ostringstream out;
  out << "checkpoint     " << dir.string() << "\n";
  out << "format         " << meta.format_version << ", written " << meta.created << "\n";
  if (meta.save_id != 0) out << "save id        " << detail::hex64(meta.save_id) << "\n";
  const std::optional<std::string> later = unhealthy_mark(dir);
  out << "healthy        "
      << (meta.health != StateHealth::kHealthy
              ? "no (saved after a step that was skipped, or whose loss was not finite or stood out)"
          : later ? "no (" + *later + ")"
                  : std::string("yes"))
      << "\n";
  out << "step           " << meta.progress.step << " (optimizer steps taken " << meta.optimizer_steps << ")\n";
  out << "tokens seen    " << meta.progress.tokens_seen << "\n";
  out << "loader         sample index " << meta.progress.samples_seen << ", seed " << meta.progress.data_seed << "\n";
  out << "world size     " << meta.world_size << " ranks, " << meta.layout.shard_ranks << " shard files, ZeRO-"
      << zero_stage_number(meta.stage);
  if (meta.hybrid_group > 0) out << ", hybrid groups of " << meta.hybrid_group;
  if (meta.layout.tp > 1) out << ", tensor parallel " << meta.layout.tp;
  out << "\n";
  out << "precision      " << meta.precision.to_string() << "\n";
  const AdamWConfig& adamw = meta.optimizer.adamw;
  out << "optimizer      " << optimizer_kind_name(meta.optimizer.kind) << " beta1 " << adamw.beta1 << ", beta2 "
      << adamw.beta2 << ", eps " << adamw.eps << ", weight decay " << adamw.weight_decay << ", grad clip "
      << meta.grad_clip << "\n";
  if (meta.loss_scaler) {
    out << "loss scaler    scale " << meta.loss_scaler->scale << ", good steps " << meta.loss_scaler->good_steps
        << ", hysteresis left " << meta.loss_scaler->hysteresis_left << "\n";
  }
  std::set<std::string> tensors;
  for (const ParamRecord& p : meta.layout.params) tensors.insert(p.name);
  out << "model          " << tensors.size() << " tensors, " << meta.layout.parameter_count() << " parameters in "
      << meta.layout.units.size() << " units\n";
  for (const auto& [key, value] : meta.config.model()) out << "  model." << key << " = " << value << "\n";
  for (const auto& [key, value] : meta.config.run()) out << "  run." << key << " = " << value << "\n";
  std::size_t rng_ranks = 0;
  for (const auto& words : meta.rng_states) rng_ranks += words.empty() ? 0 : 1;
  out << "rng states     " << rng_ranks << " of " << meta.world_size << " ranks\n";
  out << "state          " << format_bytes(state_bytes) << " (" << states << "; padded)\n";
  out << "files          " << format_bytes(file_bytes) << " (meta.h5 + " << meta.layout.shard_ranks << " shards)\n";
  if (!meta.config.effective_config().empty()) {
    out << "configuration  the options of the run that saved it:\n";
    std::istringstream lines(meta.config.effective_config());
    for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
  }
  if (meta.config.environment_report().empty()) {
    out << "environment    not recorded (saved before checkpoints recorded it)\n";
  } else {
    out << "environment    where the run that saved it ran:\n";
    std::istringstream lines(environment_report_text_of_json(meta.config.environment_report()));
    for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
  }
  return out.str();
}

VerifySummary verify_checkpoint(const fs::path& path) {
  const fs::path dir = resolve_or_throw(path);
  const CheckpointMeta meta = read_meta_file((dir / kMetaFileName).string());  // digests and structure
  check_shard_files(meta, dir);
  VerifySummary summary;
  summary.dir = dir;
  summary.step = meta.progress.step;
  summary.save_id = meta.save_id;
  summary.shard_files = meta.layout.shard_ranks;
  std::int64_t& bytes = summary.bytes;
  std::vector<std::byte> buffer;
  for (int s = 0; s < meta.layout.shard_ranks; ++s) {
    ShardFileReader reader((dir / shard_file_name(s)).string(), s);
    check_same_save(reader, meta, (dir / kMetaFileName).string());
    for (const UnitRecord& unit : meta.layout.units) {
      if (unit.tp_rank != s / meta.layout.shards_per_tp_rank()) continue;  // another tensor-parallel rank's file
      for (const StateSpec& spec : meta.layout.states) {
        const std::int64_t values = unit.shard_numel / spec.elements_per_value;
        buffer.resize(static_cast<std::size_t>(values) * dtype_size(spec.dtype));
        reader.read(unit.name, spec.name, spec.dtype, {{0, values, buffer.data()}});
      }
    }
    bytes += reader.bytes_read();
  }
  return summary;
}

}  // namespace tessera
