// open_model_source on what a user passes to --init-from, tessera_eval and tessera_generate: a
// Hugging Face model directory (model.safetensors with config.json, save_pretrained's layout) is read
// as its model.safetensors; a sharded safetensors model, by its index file or its directory, is
// refused naming the index and what to do (never opened as HDF5); a missing path and a directory
// holding nothing Tessera reads are refused naming the path.
#include "tessera/checkpointing/export/model_source.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tests/checkpointing/export/tiny_export_files.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

// The refusal of open_model_source(path) ("" when it opens).
std::string source_refusal(const std::filesystem::path& path) {
  try {
    open_model_source(path);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelSource, HuggingFaceModelDirectoryReadsItsSafetensors) {
  testing::ScratchDir dir("model_source");
  const auto file = testing::write_tiny_safetensors_export(dir.path());
  const ModelSource source = open_model_source(dir.path());
  EXPECT_TRUE(source.is_export);
  EXPECT_EQ(source.path, file);
  GptConfig expected = testing::tiny_export_gpt();
  expected.vocab_size = testing::kTinyExportVocab;  // the file's, unpadded
  EXPECT_EQ(source.config.to_string(), expected.to_string());
}

TEST(ModelSource, ShardedSafetensorsOpenThroughTheirIndex) {
  testing::ScratchDir dir("model_source");
  const auto file = testing::write_tiny_safetensors_export(dir.path());
  testing::ScratchDir sharded("model_source");
  const auto index = testing::write_sharded_copy(file, sharded.path(), 2);
  for (const auto& path : {index, sharded.path()}) {
    const ModelSource source = open_model_source(path);
    EXPECT_TRUE(source.is_export);
    EXPECT_EQ(source.path, index) << path;
    EXPECT_EQ(source.config.to_string(), open_model_source(file).config.to_string()) << path;
  }
}

TEST(ModelSource, MissingPathAndEmptyDirectoryAreRefusedNamingThePath) {
  testing::ScratchDir dir("model_source");
  const std::string missing = source_refusal(dir / "nowhere");
  EXPECT_NE(missing.find("nowhere does not exist"), std::string::npos) << missing;
  const std::string empty = source_refusal(dir.path());
  EXPECT_NE(empty.find(dir.path().string()), std::string::npos) << empty;
  EXPECT_NE(empty.find("model directory with model.safetensors"), std::string::npos) << empty;
}

}  // namespace
}  // namespace tessera
