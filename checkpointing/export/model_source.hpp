// Where a program that only runs a model (tessera_eval, sampling programs) takes it from: a
// checkpoint directory, a run directory (its latest checkpoint) or an export file of any format
// (checkpointing/export/checkpoint_export.hpp). The model's shape comes from the source itself.
#pragma once

#include <cstdint>
#include <filesystem>

#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/comm/communicator.hpp"
#include "tessera/model/modules/gpt.hpp"

namespace tessera {

class ShardedEngine;

struct ModelSource {
  std::filesystem::path path;  // the checkpoint directory (resolved) or the export file
  bool is_export = false;
  GptConfig config;              // the model to build (an export's vocabulary: the rows it holds)
  std::int64_t token_vocab = 0;  // real tokens (<= config.vocab_size): the tokenizer's when recorded
  RunConfig stored;              // the source's stored config: a checkpoint's, an HDF5 export's
                                 // (model and run fields); a safetensors export's model fields
};

// Reads the source's model fields. CheckpointError naming the file when it is neither a checkpoint
// nor an export, when a field does not parse or makes no GPT, and when an export describes more
// parameters than its file has bytes for (2 per parameter at least) — checked before any model of
// that size is built.
ModelSource open_model_source(const std::filesystem::path& path);

// Collective over `world`: sets `engine`'s parameters (built from source.config) from the source.
void load_model_weights(ShardedEngine& engine, Communicator& world, const ModelSource& source);

}  // namespace tessera
