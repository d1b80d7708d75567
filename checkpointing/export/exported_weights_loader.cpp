// Import of exported weights (any format) into a fresh engine: --init-from, tessera_eval.
#include <functional>
#include <optional>

#include "tessera/checkpointing/export/checkpoint_export.hpp"
#include "tessera/checkpointing/export/export_file.hpp"
#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/export/hf_model_config.hpp"
#include "tessera/checkpointing/export/hf_tensor_names.hpp"
#include "tessera/checkpointing/export/safetensors_file.hpp"
#include "tessera/checkpointing/export/safetensors_shards.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/checkpointing/format/virtual_datasets.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/rank_agreement.hpp"
#include "tessera/sharding/sharded_engine.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

using detail::check_id;
using detail::check_status;
using detail::H5Id;

// Elements [lo, hi) of an N-D dataset in row-major order, as f32.
void read_flat_range(hid_t dset, const Shape& shape, std::int64_t lo, std::int64_t hi, float* out,
                     const std::string& where) {
  H5Id space(check_id(H5Dget_space(dset), CheckpointErrorKind::kCorruptData, "H5Dget_space " + where), H5Sclose);
  check_status(H5Sselect_none(space.get()), CheckpointErrorKind::kIo, "H5Sselect_none");
  for (const ArrayBox& box : flat_range_boxes(shape, lo, hi)) {
    std::vector<hsize_t> start(box.start.begin(), box.start.end()), count(box.count.begin(), box.count.end());
    check_status(H5Sselect_hyperslab(space.get(), H5S_SELECT_OR, start.data(), nullptr, count.data(), nullptr),
                 CheckpointErrorKind::kIo, "selecting in " + where);
  }
  const hsize_t n[1] = {static_cast<hsize_t>(hi - lo)};
  H5Id mem(check_id(H5Screate_simple(1, n, nullptr), CheckpointErrorKind::kIo, "H5Screate_simple"), H5Sclose);
  check_status(H5Dread(dset, H5T_NATIVE_FLOAT, mem.get(), space.get(), H5P_DEFAULT, out),
               CheckpointErrorKind::kCorruptData, "reading " + where);
}

Shape dataset_shape(hid_t dset, const std::string& where) {
  H5Id space(check_id(H5Dget_space(dset), CheckpointErrorKind::kCorruptData, "H5Dget_space " + where), H5Sclose);
  const int nd = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(nd, 0)));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return Shape(dims.begin(), dims.end());
}

bool is_safetensors(const fs::path& file) { return is_safetensors_export(file); }

// Full tensors of a Hugging Face-names export by name: the stored shape (nullopt when absent) and values.
struct HfSource {
  std::function<std::optional<Shape>(const std::string&)> shape_of;
  std::function<std::vector<float>(const std::string&)> read;
  std::string where;
};

// The stored name of Hugging Face tensor `name` in `source`: as given, or — for GPT2LMHeadModel's
// "transformer." names — GPT2Model's without the prefix, as in Hugging Face's published GPT-2 files.
std::optional<std::pair<std::string, Shape>> find_hf_tensor(const HfSource& source, const std::string& name) {
  if (std::optional<Shape> stored = source.shape_of(name)) return std::pair{name, *stored};
  if (name.rfind("transformer.", 0) == 0) {
    if (std::optional<Shape> stored = source.shape_of(name.substr(12))) return std::pair{name.substr(12), *stored};
  }
  return std::nullopt;
}

// The Hugging Face tensors of one parameter as `source` stores them (the stored name and shape of
// each piece), each checked against the parameter's shape; CheckpointError naming what is wrong.
struct StoredPiece {
  HfTensorName hf;
  std::string name;
  Shape stored;
};

std::vector<StoredPiece> stored_pieces(const HfSource& source, GptArchitecture architecture, const FlatEntry& e) {
  const Shape shape = e.parameter->full_shape();  // the whole tensor, of which a tensor-parallel rank holds a piece
  const std::vector<HfTensorName> pieces = hf_tensor_names(architecture, e.name, shape);
  if (pieces.empty()) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                          "this model's parameter '" + e.name + "' has no Hugging Face " +
                              gpt_architecture_name(architecture) + " name, so " + source.where +
                              " cannot hold it; load an hdf5-format export instead");
  }
  std::vector<StoredPiece> out;
  for (const HfTensorName& hf : pieces) {
    const auto found = find_hf_tensor(source, hf.name);
    if (!found) {
      throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                            source.where + " has no tensor '" + hf.name + "' (" + e.name + ", shape " +
                                shape_string(shape) + " in this model); use the model options it was exported with");
    }
    const auto& [name, stored] = *found;
    const bool fits = hf.vocab_rows ? stored.size() == 2 && stored.at(1) == shape.at(1) && stored.at(0) >= 1 &&
                                          stored.at(0) <= shape.at(0)
                                    : stored == hf_shape(hf, shape, 0);
    if (!fits) {
      throw CheckpointError(
          CheckpointErrorKind::kConfigMismatch,
          source.where + ":" + name + " has shape " + shape_string(stored) + " but this model's " + e.name + " " +
              shape_string(shape) + " needs " + shape_string(hf_shape(hf, shape, shape.at(0))) +
              (hf.vocab_rows ? " (or fewer rows, at least one)" : "") + "; use the model options it was exported with");
    }
    out.push_back({hf, name, stored});
  }
  return out;
}

// Each unit's optimizer range from a Hugging Face-names source: every parameter's tensors checked
// by name and shape on every rank; those in the range read whole, turned back into Tessera's
// layout, and the range's part copied.
void stage_hf(const std::vector<std::unique_ptr<FlatParamUnit>>& units, const HfSource& source,
              GptArchitecture architecture, std::vector<std::vector<float>>& staging) {
  for (std::size_t u = 0; u < units.size(); ++u) {
    const FlatRange range = units[u]->optimizer_range();
    const std::int64_t begin = range.begin, end = range.end();
    staging[u].assign(static_cast<std::size_t>(range.count), 0.0f);
    for (const FlatEntry& e : units[u]->layout().entries()) {
      const std::vector<StoredPiece> pieces = stored_pieces(source, architecture, e);
      const std::int64_t lo = std::max(begin, e.offset), hi = std::min(end, e.offset + e.numel);
      if (lo >= hi) continue;
      const Shape whole_shape = e.parameter->full_shape();
      std::vector<float> whole(static_cast<std::size_t>(shape_numel(whole_shape)), 0.0f);
      for (const StoredPiece& p : pieces) place_from_hf(p.hf, whole_shape, p.stored, source.read(p.name), whole);
      // This rank's elements [lo, hi) of the parameter (of its piece, under tensor parallelism).
      for_each_global_run(e.parameter->shape, e.parameter->slice, lo - e.offset, hi - lo,
                          [&](std::int64_t global, std::int64_t local, std::int64_t count) {
                            std::copy_n(whole.begin() + global, count, staging[u].begin() + (e.offset + local - begin));
                          });
    }
  }
}

// An HDF5 export's kind check and its /config/model fields.
RunConfig hdf5_model_fields(hid_t f, const std::string& path) {
  const std::string kind = detail::has_attribute(f, "kind") ? detail::read_string_attribute(f, "kind", path) : "";
  if (kind != "export") {
    throw CheckpointError(
        CheckpointErrorKind::kUnknownFormat,
        path + " is not a file written by `tessera_ckpt export` (kind '" + kind + "'); export the checkpoint first");
  }
  RunConfig stored;
  if (detail::link_exists(f, "config")) {
    H5Id config = detail::open_group(f, "config", path);
    if (detail::link_exists(config.get(), "model")) {
      H5Id model = detail::open_group(config.get(), "model", path);
      for (const std::string& key : detail::attribute_names(model.get())) {
        stored.set_model(key, detail::read_string_attribute(model.get(), key, path + ":/config/model"));
      }
    }
  }
  return stored;
}

std::string hdf5_names(hid_t f, const std::string& path) {
  return detail::has_attribute(f, "names") ? detail::read_string_attribute(f, "names", path) : kTesseraNames;
}

// A torch-names file's fields as read_export_model_config gives them: vocab_size = the rows written.
RunConfig hf_fields_of_hdf5(RunConfig stored) {
  const auto it = stored.model().find("exported_vocab_size");
  if (it != stored.model().end()) stored.set_model("vocab_size", it->second);
  RunConfig out;
  for (const auto& [key, value] : stored.model()) {
    if (key != "exported_vocab_size") out.set_model(key, value);
  }
  return out;
}

// Tessera-names HDF5: each rank reads the hyperslabs of its optimizer range only.
void stage_tessera_hdf5(const std::vector<std::unique_ptr<FlatParamUnit>>& units, hid_t f, const std::string& path,
                        std::vector<std::vector<float>>& staging) {
  H5Id model = detail::open_group(f, "model", path);
  for (std::size_t u = 0; u < units.size(); ++u) {
    const FlatParamUnit& unit = *units[u];
    const FlatRange range = unit.optimizer_range();
    const std::int64_t begin = range.begin, end = range.end();
    staging[u].assign(static_cast<std::size_t>(range.count), 0.0f);
    for (const FlatEntry& e : unit.layout().entries()) {
      const std::string where = path + ":/model/" + e.name;
      if (!detail::link_exists(model.get(), e.name)) {
        throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                              path + " has no parameter '" + e.name + "' (shape " + shape_string(e.parameter->shape) +
                                  " in this model); use the model options it was exported with");
      }
      H5Id dset = detail::open_dataset(model.get(), e.name, path + ":/model");
      check_virtual_sources(dset.get(), where);
      const Shape shape = dataset_shape(dset.get(), where);
      if (shape != e.parameter->full_shape()) {
        throw CheckpointError(CheckpointErrorKind::kConfigMismatch, where + " has shape " + shape_string(shape) +
                                                                        " but this model's is " +
                                                                        shape_string(e.parameter->full_shape()) +
                                                                        "; use the model options it was exported with");
      }
      const std::int64_t lo = std::max(begin, e.offset), hi = std::min(end, e.offset + e.numel);
      if (lo >= hi) continue;
      // Each run of this rank's elements that is consecutive in the stored (whole) tensor.
      for_each_global_run(e.parameter->shape, e.parameter->slice, lo - e.offset, hi - lo,
                          [&](std::int64_t global, std::int64_t local, std::int64_t count) {
                            read_flat_range(dset.get(), shape, global, global + count,
                                            staging[u].data() + (e.offset + local - begin), where);
                          });
    }
  }
}

// Hugging Face-names HDF5 (torch-names): whole datasets by name.
HfSource hdf5_hf_source(hid_t model, const std::string& path) {
  HfSource source;
  source.where = path;
  source.shape_of = [model, path](const std::string& name) -> std::optional<Shape> {
    if (!detail::link_exists(model, name)) return std::nullopt;
    H5Id dset = detail::open_dataset(model, name, path + ":/model");
    return dataset_shape(dset.get(), path + ":/model/" + name);
  };
  source.read = [model, path](const std::string& name) {
    const std::string where = path + ":/model/" + name;
    H5Id dset = detail::open_dataset(model, name, path + ":/model");
    check_virtual_sources(dset.get(), where);
    std::vector<float> values(static_cast<std::size_t>(shape_numel(dataset_shape(dset.get(), where))));
    check_status(H5Dread(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                 CheckpointErrorKind::kCorruptData, "reading " + where);
    return values;
  };
  return source;
}

}  // namespace

RunConfig read_export_model_config(const fs::path& file) {
  if (is_safetensors(file)) return read_hf_config(file.parent_path() / "config.json");
  detail::Hdf5Guard guard;
  const std::string path = file.string();
  H5Id f = detail::open_file_read(path);
  const RunConfig stored = hdf5_model_fields(f.get(), path);
  return hdf5_names(f.get(), path) == kHfGpt2Names ? hf_fields_of_hdf5(stored) : stored;
}

void load_exported_weights(ShardedEngine& engine, Communicator& world, const fs::path& file,
                           const RunConfig& expected) {
  const auto& units = engine.units();
  std::vector<std::vector<float>> staging(units.size());
  run_and_agree(world, [&] {
    // An export file, or a Hugging Face model directory's model.safetensors.
    const fs::path export_file = export_file_of(file).value_or(file);
    const std::string path = export_file.string();
    if (is_safetensors(export_file)) {
      check_hf_model_fields(read_hf_config(export_file.parent_path() / "config.json"), expected, path);
      HfSource source;
      source.where = path;
      if (is_safetensors_index(export_file)) {
        auto shards = std::make_shared<SafetensorsShards>(export_file);
        source.shape_of = [shards](const std::string& name) -> std::optional<Shape> {
          if (!shards->contains(name)) return std::nullopt;
          return shards->tensor(name).shape;
        };
        source.read = [shards](const std::string& name) { return shards->read_f32(name); };
      } else {
        auto reader = std::make_shared<SafetensorsReader>(export_file);
        source.shape_of = [reader](const std::string& name) -> std::optional<Shape> {
          if (!reader->contains(name)) return std::nullopt;
          return reader->tensors().at(name).shape;
        };
        source.read = [reader](const std::string& name) { return reader->read_f32(name); };
      }
      stage_hf(units, source, gpt_architecture_of(expected, path), staging);
      return;
    }
    detail::Hdf5Guard guard;
    H5Id f = detail::open_file_read(path);
    const RunConfig stored = hdf5_model_fields(f.get(), path);
    const std::string names = hdf5_names(f.get(), path);
    if (names == kHfGpt2Names) {
      check_hf_model_fields(hf_fields_of_hdf5(stored), expected, path);
      H5Id model = detail::open_group(f.get(), "model", path);
      stage_hf(units, hdf5_hf_source(model.get(), path), gpt_architecture_of(expected, path), staging);
    } else if (names == kTesseraNames) {
      check_model_fields(stored, expected, path);
      stage_tessera_hdf5(units, f.get(), path, staging);
    } else {
      throw CheckpointError(CheckpointErrorKind::kUnknownFormat, path + " names its tensors '" + names +
                                                                     "', which this build does not read (it reads " +
                                                                     kTesseraNames + " and " + kHfGpt2Names + ")");
    }
  });
  for (std::size_t u = 0; u < units.size(); ++u) {
    units[u]->write_state(0, 0, static_cast<std::int64_t>(staging[u].size()), staging[u].data());  // the f32 master
  }
  engine.reset_optimizer_state();
  engine.set_optimizer_steps(0);
  engine.publish_parameters();
}

}  // namespace tessera
