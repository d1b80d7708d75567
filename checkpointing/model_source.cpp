// Model sources: a checkpoint (meta.h5's model fields) or an export (its stored config).
#include "checkpointing/model_source.hpp"

#include "checkpointing/checkpoint_error.hpp"
#include "checkpointing/checkpoint_export.hpp"
#include "checkpointing/checkpoint_loader.hpp"
#include "checkpointing/checkpoint_meta.hpp"
#include "checkpointing/checkpoint_paths.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

std::int64_t field(const RunConfig& config, const std::string& key, const fs::path& where) {
  const auto it = config.model().find(key);
  if (it == config.model().end()) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch, where.string() + " records no model field " + key);
  }
  return std::stoll(it->second);
}

GptConfig gpt_config_of(const RunConfig& config, const fs::path& where) {
  GptConfig gpt;
  gpt.vocab_size = field(config, "vocab_size", where);
  gpt.max_seq_len = field(config, "max_seq_len", where);
  gpt.layers = field(config, "layers", where);
  gpt.heads = field(config, "heads", where);
  gpt.channels = field(config, "channels", where);
  return gpt;
}

RunConfig model_fields(const GptConfig& gpt) {
  RunConfig config;
  add_gpt_config(config, gpt);
  return config;
}

}  // namespace

ModelSource open_model_source(const fs::path& path) {
  ModelSource source;
  if (fs::is_regular_file(path)) {
    source.path = path;
    source.is_export = true;
    source.config = gpt_config_of(read_export_model_config(path), path);
    source.token_vocab = source.config.vocab_size;
    return source;
  }
  const auto dir = resolve_checkpoint(path);
  if (!dir) {
    throw CheckpointError(CheckpointErrorKind::kMissingFile,
                          path.string() + " is neither an export file nor a checkpoint or run directory with a checkpoint");
  }
  source.path = *dir;
  const CheckpointMeta meta = read_meta_file((*dir / kMetaFileName).string());
  source.config = gpt_config_of(meta.config, *dir);
  const auto vocab = meta.config.run().find("tokenizer_vocab_size");
  source.token_vocab = vocab != meta.config.run().end() ? std::stoll(vocab->second) : source.config.vocab_size;
  return source;
}

void load_model_weights(ShardedEngine& engine, Communicator& world, const ModelSource& source) {
  if (source.is_export) {
    load_exported_weights(engine, world, source.path, model_fields(source.config));
  } else {
    load_checkpoint(engine, world, source.path, model_fields(source.config));
  }
}

}  // namespace tessera
