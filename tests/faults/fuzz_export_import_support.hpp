// The read every export fuzz test makes of a mutated file: open it as a model source, check that
// the model it describes fits its bytes (2 per parameter at least: what keeps a small file from
// claiming a model of gigabytes), build that model on the meta device and import the file into it.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

#include "tessera/checkpointing/export/model_source.hpp"
#include "tests/checkpointing/export/tiny_export_files.hpp"
#include "tests/faults/fuzz_support.hpp"

namespace tessera::testing::fuzz {

inline void open_and_import(const std::filesystem::path& file) {
  const ModelSource source = open_model_source(file);
  const GptConfig& g = source.config;
  const std::int64_t parameters = g.vocab_size * g.channels + g.max_seq_len * g.channels +
                                  g.layers * (12 * g.channels * g.channels + 13 * g.channels) + 2 * g.channels;
  if (parameters > static_cast<std::int64_t>(std::filesystem::file_size(file)) / 2) {
    throw AcceptedBadFile("it describes " + g.to_string() + ", more parameters than the file has bytes for");
  }
  MetaEngine meta(source.config);
  load_exported_weights(meta.engine, meta.world, file);
}

}  // namespace tessera::testing::fuzz
