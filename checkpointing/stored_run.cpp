// Reading the RunConfig of a checkpoint (meta.h5) or an export file (/config), and the GPT in it.
#include "checkpointing/stored_run.hpp"

#include <algorithm>
#include <fstream>

#include "checkpointing/checkpoint_meta.hpp"
#include "checkpointing/checkpoint_paths.hpp"
#include "checkpointing/hdf5_util.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

using detail::H5Id;

bool is_hdf5_file(const fs::path& path) {
  static constexpr char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  char head[8] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(head, sizeof head) && std::equal(head, head + 8, kSignature);
}

RunConfig read_export_config(const fs::path& file) {
  detail::Hdf5Guard guard;
  const std::string path = file.string();
  H5Id f = detail::open_file_read(path);
  const std::string kind = detail::has_attribute(f.get(), "kind") ? detail::read_string_attribute(f.get(), "kind", path) : "";
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

}  // namespace

StoredRun read_stored_run(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const auto dir = resolve_checkpoint(path);
    if (!dir) throw CheckpointError(CheckpointErrorKind::kMissingFile, "no checkpoint found in " + path.string());
    return {read_meta_file((*dir / kMetaFileName).string()).config, *dir};
  }
  if (!fs::exists(path, ec)) {
    throw CheckpointError(CheckpointErrorKind::kMissingFile,
                          path.string() + " does not exist; pass a checkpoint directory, a run directory or an export file");
  }
  if (!is_hdf5_file(path)) {
    throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                          path.string() + " is neither a checkpoint directory nor an HDF5 export of `tessera_ckpt export`");
  }
  return {read_export_config(path), std::nullopt};
}

GptConfig gpt_config_of(const RunConfig& config, const std::string& where) {
  const auto field = [&](const char* key) -> std::int64_t {
    const auto it = config.model().find(key);
    if (it == config.model().end()) {
      throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                            where + " does not record the model field '" + key + "'; it was not saved by a GPT run");
    }
    return std::stoll(it->second);
  };
  GptConfig gpt;
  gpt.vocab_size = field("vocab_size");
  gpt.max_seq_len = field("max_seq_len");
  gpt.layers = field("layers");
  gpt.heads = field("heads");
  gpt.channels = field("channels");
  return gpt;
}

}  // namespace tessera
