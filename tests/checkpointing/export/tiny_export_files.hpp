// Small valid exports of a tiny GPT written by the test itself, without a checkpoint: a safetensors
// export (model.safetensors + config.json) and an HDF5 export (Tessera's or Hugging Face's names),
// every value 0.01 x its position; and an engine to import them into that holds no data (the meta
// device over a loopback communicator), so the whole import runs in one process in milliseconds.
#pragma once

#include <hdf5.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/checkpointing/export/checkpoint_export.hpp"
#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/export/hf_model_config.hpp"
#include "tessera/checkpointing/export/hf_tensor_names.hpp"
#include "tessera/checkpointing/export/safetensors_file.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/comm/loopback/loopback_communicator.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/runtime/meta/meta_device.hpp"
#include "tessera/sharding/sharded_engine.hpp"

namespace tessera::testing {

// 13 rows (11 real tokens), 4 positions, 1 block of 8 channels in 2 heads: 1,056 parameters.
inline GptConfig tiny_export_gpt() {
  GptConfig gpt;
  gpt.vocab_size = 13;
  gpt.max_seq_len = 4;
  gpt.layers = 1;
  gpt.heads = 2;
  gpt.channels = 8;
  return gpt;
}
inline constexpr std::int64_t kTinyExportVocab = 11;

struct NamedShape {
  std::string name;
  Shape shape;
};

// The model's parameters by Tessera name and shape.
inline std::vector<NamedShape> tiny_parameters(const GptConfig& gpt) {
  Gpt model(gpt);
  std::vector<NamedShape> out;
  for (const NamedParameter& p : model.named_parameters()) out.push_back({p.name, p.parameter->shape});
  return out;
}

inline std::vector<float> counting_values(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.01f * static_cast<float>(i);
  return v;
}

// dir/model.safetensors and dir/config.json; returns the safetensors path. `wte_rows`: the token
// embedding's rows in the file (config.json says kTinyExportVocab whatever they are).
inline std::filesystem::path write_tiny_safetensors_export(const std::filesystem::path& dir,
                                                           const GptConfig& gpt = tiny_export_gpt(),
                                                           std::int64_t wte_rows = kTinyExportVocab) {
  std::vector<SafetensorsTensor> tensors;
  for (const NamedShape& p : tiny_parameters(gpt)) {
    for (const HfTensorName& hf : hf_tensor_names(gpt.architecture, p.name, p.shape)) {
      tensors.push_back({hf.name, DType::kF32, hf_shape(hf, p.shape, wte_rows), 0, 0});
    }
  }
  const std::filesystem::path path = dir / "model.safetensors";
  SafetensorsWriter writer(path, tensors, {{"format", "pt"}});
  for (const SafetensorsTensor& t : tensors) writer.write_next(counting_values(shape_numel(t.shape)));
  writer.finish();
  RunConfig model;
  add_gpt_config(model, gpt);
  write_hf_config(dir / "config.json", model, kTinyExportVocab, DType::kF32, 7);
  return path;
}

// `file` (a safetensors model) split as save_pretrained splits a large model: its tensors dealt in
// turn into `shards` files model-0000K-of-0000N.safetensors in `dir`, with
// model.safetensors.index.json naming each tensor's file and a copy of the config.json beside
// `file`. Returns the index.
inline std::filesystem::path write_sharded_copy(const std::filesystem::path& file, const std::filesystem::path& dir,
                                                int shards) {
  std::filesystem::create_directories(dir);
  SafetensorsReader reader(file);
  std::vector<std::vector<SafetensorsTensor>> parts(static_cast<std::size_t>(shards));
  std::size_t k = 0;
  for (const auto& [name, t] : reader.tensors()) {
    SafetensorsTensor copy = t;
    copy.name = name;
    parts[k++ % parts.size()].push_back(copy);
  }
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  for (std::size_t p = 0; p < parts.size(); ++p) {
    char shard[64];
    std::snprintf(shard, sizeof shard, "model-%05zu-of-%05d.safetensors", p + 1, shards);
    SafetensorsWriter writer(dir / shard, parts[p], {{"format", "pt"}});
    for (const SafetensorsTensor& t : parts[p]) {
      writer.write_next(reader.read_f32(t.name));
      index["weight_map"][t.name] = shard;
    }
    writer.finish();
  }
  std::ofstream(dir / "model.safetensors.index.json") << index.dump(2);
  std::filesystem::copy_file(file.parent_path() / "config.json", dir / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  return dir / "model.safetensors.index.json";
}

// An HDF5 export of the tiny model as `tessera_ckpt export` writes it (f32): names "tessera" or
// "hf-gpt2". `claimed`: the model its /config/model records.
inline void write_tiny_hdf5_export(const std::filesystem::path& path, const std::string& names,
                                   const GptConfig& claimed = tiny_export_gpt()) {
  const GptConfig gpt = tiny_export_gpt();
  using detail::H5Id;
  detail::Hdf5Guard guard;
  H5Id file = detail::create_file(path.string());
  detail::write_attribute(file.get(), "kind", std::string("export"));
  detail::write_attribute(file.get(), "names", names);
  detail::write_attribute(file.get(), "tessera_checkpoint_format", std::int64_t{1});
  H5Id config = detail::create_group(file.get(), "config", path.string());
  H5Id model_fields = detail::create_group(config.get(), "model", path.string());
  RunConfig fields;
  add_gpt_config(fields, claimed);
  for (const auto& [key, value] : fields.model()) detail::write_attribute(model_fields.get(), key, value);
  if (names == kHfGpt2Names) {
    detail::write_attribute(model_fields.get(), "exported_vocab_size", std::to_string(kTinyExportVocab));
  }
  H5Id model = detail::create_group(file.get(), "model", path.string());
  for (const NamedShape& p : tiny_parameters(gpt)) {
    Shape shape = p.shape;
    std::string name = p.name;
    if (names == kHfGpt2Names) {
      const std::vector<HfTensorName> hf = hf_tensor_names(gpt.architecture, p.name, p.shape);
      if (hf.size() != 1) continue;
      shape = hf_shape(hf[0], p.shape, kTinyExportVocab);
      name = hf[0].name;
    }
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    H5Id space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
    H5Id lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    H5Id dset(H5Dcreate2(model.get(), name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Dclose);
    const std::vector<float> values = counting_values(shape_numel(shape));
    H5Dwrite(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  }
}

// The tiny GPT sharded over one loopback rank on the meta device: imports read and check the file
// as for a real run; the values land nowhere.
struct MetaEngine {
  std::unique_ptr<Device> device = make_meta_device();
  LoopbackCommunicator world{0, 1};
  Gpt model;
  ShardedEngine engine;
  explicit MetaEngine(const GptConfig& gpt = tiny_export_gpt())
      : model(gpt), engine(model, *device, world, ShardingConfig{}, 1) {}
};

}  // namespace tessera::testing
