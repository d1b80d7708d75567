// Model sources: a checkpoint (meta.h5's model fields) or an export (its stored config).
#include "tessera/checkpointing/export/model_source.hpp"

#include "tessera/checkpointing/export/checkpoint_export.hpp"
#include "tessera/checkpointing/export/export_file.hpp"
#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/export/safetensors_shards.hpp"
#include "tessera/checkpointing/export/tokenizer_fields.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/core/parse_number.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_reader.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

using detail::H5Id;

// An HDF5 export's /config sections (model and run fields).
RunConfig read_hdf5_export_config(const fs::path& file) {
  detail::Hdf5Guard guard;
  const std::string path = file.string();
  H5Id f = detail::open_file_read(path);
  const std::string kind =
      detail::has_attribute(f.get(), "kind") ? detail::read_string_attribute(f.get(), "kind", path) : "";
  if (kind != "export") {
    throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                          path + " is not a file written by `tessera_ckpt export` (kind '" + kind + "')");
  }
  RunConfig config;
  if (!detail::link_exists(f.get(), "config")) return config;
  H5Id group = detail::open_group(f.get(), "config", path);
  for (const char* section : {"model", "run"}) {
    if (!detail::link_exists(group.get(), section)) continue;
    H5Id fields = detail::open_group(group.get(), section, path);
    const std::string where = path + ":/config/" + section;
    for (const std::string& key : detail::attribute_names(fields.get())) {
      const std::string value = detail::read_string_attribute(fields.get(), key, where);
      if (std::string(section) == "model") {
        config.set_model(key, value);
      } else {
        config.set_run(key, value);
      }
    }
  }
  return config;
}

// An export holds every parameter of the model it describes, at 2 bytes or more each: a file too
// small for that describes a model it does not hold, refused before anything of that size is built.
void check_export_holds_model(const fs::path& file, const GptConfig& gpt) {
  std::error_code ec;
  // A shard index holds no tensors: its shards' bytes count.
  const std::uintmax_t bytes = is_safetensors_index(file)
                                   ? static_cast<std::uintmax_t>(SafetensorsShards(file).total_bytes())
                                   : fs::file_size(file, ec);
  if (ec) throw CheckpointError(CheckpointErrorKind::kIo, file.string() + ": cannot read its size: " + ec.message());
  const std::int64_t parameters = gpt_parameter_count(gpt);
  if (static_cast<std::uintmax_t>(parameters) > bytes / 2) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          file.string() + " describes a model of " + std::to_string(parameters) + " parameters (" +
                              gpt.to_string() + ") but holds only " + std::to_string(bytes) +
                              " bytes, less than 2 per parameter; its config is damaged or belongs to another file");
  }
}

RunConfig model_fields(const GptConfig& gpt) {
  RunConfig config;
  add_gpt_config(config, gpt);
  return config;
}

// An export file's source: its model fields, and a check that it holds that many parameters.
ModelSource open_export(const fs::path& file) {
  ModelSource source;
  source.path = file;
  source.is_export = true;
  source.config = gpt_config_of(read_export_model_config(file), file.string());
  check_export_holds_model(file, source.config);
  source.token_vocab = source.config.vocab_size;
  source.stored = is_safetensors_export(file) ? read_export_model_config(file) : read_hdf5_export_config(file);
  // A Hugging Face model directory's tokenizer.json is the model's tokenizer.
  std::error_code ec;
  if (is_safetensors_export(file) && fs::exists(file.parent_path() / kHfTokenizerFileName, ec)) {
    add_tokenizer(source.stored, bpe_tokenizer_spec(file.parent_path().string(), TokenizerKind::kHf));
  }
  return source;
}

}  // namespace

ModelSource open_model_source(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw CheckpointError(
        CheckpointErrorKind::kMissingFile,
        path.string() + " does not exist; pass a checkpoint directory, a run directory or an export file");
  }
  const auto dir = fs::is_regular_file(path, ec) ? std::nullopt : resolve_checkpoint(path);
  if (!dir) {
    // An export file, or a Hugging Face model directory's model.safetensors or shard index.
    if (const auto file = export_file_of(path)) return open_export(*file);
    throw CheckpointError(CheckpointErrorKind::kMissingFile,
                          path.string() +
                              " is neither an export file, a checkpoint or run directory with a checkpoint, nor a "
                              "model directory with model.safetensors (or model.safetensors.index.json)");
  }
  ModelSource source;
  source.path = *dir;
  const CheckpointMeta meta = read_meta_file((*dir / kMetaFileName).string());
  source.config = gpt_config_of(meta.config, dir->string());
  source.stored = meta.config;
  const auto vocab = meta.config.run().find("tokenizer_vocab");
  source.token_vocab =
      vocab != meta.config.run().end()
          ? parse_integer(vocab->second, (*dir / kMetaFileName).string() + ": run field tokenizer_vocab", 1,
                          source.config.vocab_size)
          : source.config.vocab_size;
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
