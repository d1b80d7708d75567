// Imports of exports that come from elsewhere: the tiny model's safetensors and HDF5 exports load;
// a config that claims a model far larger than its file is refused when the source is opened,
// before a model of that size is built; a token embedding of zero rows is refused; an HDF5 export
// whose tensor is a virtual dataset with a missing source file (which HDF5 reads as zeros) is
// refused naming the source; --init-from a Hugging Face model directory loads its model.safetensors,
// and a sharded model is refused naming its index (never opened as HDF5).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tessera/checkpointing/export/model_source.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tests/checkpointing/export/tiny_export_files.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

std::string import_refusal(const fs::path& file) {
  try {
    MetaEngine meta;
    load_exported_weights(meta.engine, meta.world, file);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ExportedWeightsLoader, TinyExportsOpenAndLoad) {
  ScratchDir dir("exported_weights_loader");
  const fs::path st = write_tiny_safetensors_export(dir.path());
  write_tiny_hdf5_export(dir / "tessera.h5", kTesseraNames);
  write_tiny_hdf5_export(dir / "hf.h5", kHfGpt2Names);
  for (const fs::path& file : {st, dir / "tessera.h5", dir / "hf.h5"}) {
    const ModelSource source = open_model_source(file);
    EXPECT_EQ(source.config.channels, 8) << file;
    GptConfig gpt = tiny_export_gpt();
    gpt.vocab_size = source.config.vocab_size;
    MetaEngine meta(gpt);
    EXPECT_NO_THROW(load_exported_weights(meta.engine, meta.world, file)) << file;
  }
}

TEST(ExportedWeightsLoader, ModelDirectoryAndShardedModelLoad) {
  ScratchDir dir("exported_weights_loader");
  const fs::path st = write_tiny_safetensors_export(dir.path());
  GptConfig gpt = tiny_export_gpt();
  gpt.vocab_size = kTinyExportVocab;
  MetaEngine meta(gpt);
  EXPECT_NO_THROW(load_exported_weights(meta.engine, meta.world, dir.path()));
  ScratchDir sharded("exported_weights_loader");
  const fs::path index = write_sharded_copy(st, sharded.path(), 3);
  for (const fs::path& path : {sharded.path(), index}) {
    MetaEngine from_shards(gpt);
    EXPECT_NO_THROW(load_exported_weights(from_shards.engine, from_shards.world, path)) << path;
    EXPECT_EQ(open_model_source(path).config.to_string(), gpt.to_string()) << path;
  }
}

TEST(ExportedWeightsLoader, ABrokenShardIndexIsRefusedNamingIt) {
  ScratchDir dir("exported_weights_loader");
  const fs::path st = write_tiny_safetensors_export(dir.path());
  ScratchDir sharded("exported_weights_loader");
  const fs::path index = write_sharded_copy(st, sharded.path(), 2);
  nlohmann::json json;
  std::ifstream(index) >> json;
  const auto refusal_with = [&](const nlohmann::json& text) {
    std::ofstream(index) << text.dump();
    return import_refusal(index);
  };
  const std::string first = json["weight_map"].begin().key();  // a tensor of the first shard
  nlohmann::json missing = json;
  missing["weight_map"][first] = "model-00009-of-00009.safetensors";
  std::string e = refusal_with(missing);
  EXPECT_NE(e.find("names the shard model-00009-of-00009.safetensors, which is not there"), std::string::npos) << e;
  nlohmann::json misplaced = json;
  const std::string first_shard = json["weight_map"][first];
  misplaced["weight_map"][first] = first_shard == "model-00001-of-00002.safetensors"
                                       ? "model-00002-of-00002.safetensors"
                                       : "model-00001-of-00002.safetensors";
  e = refusal_with(misplaced);
  EXPECT_NE(e.find("places " + first + " in "), std::string::npos) << e;
  EXPECT_NE(e.find("which does not hold it"), std::string::npos) << e;
  nlohmann::json outside = json;
  outside["weight_map"][first] = "../model.safetensors";
  e = refusal_with(outside);
  EXPECT_NE(e.find("not a file beside the index"), std::string::npos) << e;
  std::ofstream(index) << "{\"weight_map\": ";
  e = import_refusal(index);
  EXPECT_NE(e.find(index.string() + " is not JSON"), std::string::npos) << e;
  EXPECT_EQ(e.find("HDF5"), std::string::npos) << e;
}

TEST(ExportedWeightsLoader, AConfigClaimingALargeModelIsRefusedBeforeBuildingIt) {
  ScratchDir dir("exported_weights_loader");
  const fs::path st = write_tiny_safetensors_export(dir.path());
  // GPT-2 XL's shape (1.5e9 parameters) beside a 4 KB file.
  std::ofstream(dir / "config.json") << R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024,)"
                                     << R"( "n_layer": 48, "n_head": 25, "n_embd": 1600})";
  try {
    open_model_source(st);
    ADD_FAILURE() << "accepted";
  } catch (const CheckpointError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find(st.string() + " describes a model of 1557611200 parameters"), std::string::npos) << text;
    EXPECT_NE(text.find("holds only"), std::string::npos) << text;
  }
  // The same claim in an HDF5 export's /config/model.
  write_tiny_hdf5_export(dir / "big.h5", kTesseraNames, GptConfig{50304, 1024, 48, 25, 1600});
  try {
    open_model_source(dir / "big.h5");
    ADD_FAILURE() << "accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("big.h5 describes a model of"), std::string::npos) << e.what();
  }
}

TEST(ExportedWeightsLoader, ATokenEmbeddingOfZeroRowsIsRefused) {
  ScratchDir dir("exported_weights_loader");
  const fs::path st = write_tiny_safetensors_export(dir.path(), tiny_export_gpt(), 0);
  const std::string text = import_refusal(st);
  EXPECT_NE(text.find(st.string() + ":transformer.wte.weight has shape (0, 8)"), std::string::npos) << text;
}

// /model/ln_f.bias of a Tessera-names export replaced by a virtual dataset over source.h5:/ln_f.bias.
void make_ln_f_bias_virtual(const fs::path& file, const fs::path& source) {
  using detail::H5Id;
  detail::Hdf5Guard guard;
  const hsize_t dims[1] = {8};
  {
    H5Id src = detail::create_file(source.string());
    H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
    H5Id d(H5Dcreate2(src.get(), "ln_f.bias", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
           H5Dclose);
    const std::vector<float> ones(8, 1.0f);
    H5Dwrite(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, ones.data());
  }
  H5Id f = detail::open_file_readwrite(file.string());
  H5Ldelete(f.get(), "model/ln_f.bias", H5P_DEFAULT);
  H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  H5Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_virtual(dcpl.get(), space.get(), source.filename().c_str(), "ln_f.bias", space.get());
  H5Id d(H5Dcreate2(f.get(), "model/ln_f.bias", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
         H5Dclose);
}

TEST(ExportedWeightsLoader, AVirtualDatasetWithAMissingSourceIsRefused) {
  ScratchDir dir("exported_weights_loader");
  const fs::path file = dir / "export.h5", source = dir / "source.h5";
  write_tiny_hdf5_export(file, kTesseraNames);
  make_ln_f_bias_virtual(file, source);
  EXPECT_EQ(import_refusal(file), "") << "the source is there";
  fs::remove(source);
  const std::string text = import_refusal(file);
  EXPECT_NE(text.find(file.string() + ":/model/ln_f.bias is a virtual dataset whose source file " + source.string() +
                      " is missing"),
            std::string::npos)
      << text;
  // The source file there, its dataset not.
  {
    detail::Hdf5Guard guard;
    detail::create_file(source.string());
  }
  EXPECT_NE(import_refusal(file).find("source.h5:ln_f.bias does not exist"), std::string::npos) << import_refusal(file);
}

}  // namespace
}  // namespace tessera::testing
