// Export from shard files to one HDF5 file, and fine-tuning import into an engine.
#include "checkpointing/checkpoint_export.hpp"

#include <map>
#include <memory>
#include <stdexcept>

#include "checkpointing/checkpoint_loader.hpp"
#include "checkpointing/checkpoint_meta.hpp"
#include "checkpointing/checkpoint_paths.hpp"
#include "checkpointing/disk_space.hpp"
#include "checkpointing/hdf5_util.hpp"
#include "checkpointing/rank_agreement.hpp"
#include "checkpointing/shard_file_reader.hpp"
#include "checkpointing/shard_file_writer.hpp"
#include "checkpointing/virtual_datasets.hpp"
#include "core/setting_error.hpp"
#include "precision/float_bits.hpp"
#include "sharding/sharded_engine.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

using detail::check_id;
using detail::check_status;
using detail::H5Id;

void write_parameter(hid_t group, const ParamRecord& p, const std::vector<float>& values, DType dtype,
                     const std::string& where) {
  std::vector<hsize_t> dims(p.shape.begin(), p.shape.end());
  if (dims.empty()) dims.push_back(1);
  H5Id space(check_id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), CheckpointErrorKind::kIo,
                      "H5Screate_simple"),
             H5Sclose);
  H5Id bf16;
  hid_t type = H5T_IEEE_F32LE;
  if (dtype == DType::kBF16) {
    bf16 = detail::bf16_file_type();
    type = bf16.get();
  }
  H5Id dset(check_id(H5Dcreate2(group, p.name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     CheckpointErrorKind::kIo, "creating " + where + ":/model/" + p.name),
            H5Dclose);
  if (dtype == DType::kBF16) {
    std::vector<std::uint16_t> bits(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) bits[i] = f32_to_bf16(values[i]);
    check_status(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, bits.data()), CheckpointErrorKind::kIo,
                 "writing " + where + ":/model/" + p.name);
  } else {
    check_status(H5Dwrite(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                 CheckpointErrorKind::kIo, "writing " + where + ":/model/" + p.name);
  }
  detail::write_attribute(dset.get(), "dtype", std::string(dtype_name(dtype)));
}

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
  check_status(H5Dread(dset, H5T_NATIVE_FLOAT, mem.get(), space.get(), H5P_DEFAULT, out), CheckpointErrorKind::kCorruptData,
               "reading " + where);
}

Shape dataset_shape(hid_t dset, const std::string& where) {
  H5Id space(check_id(H5Dget_space(dset), CheckpointErrorKind::kCorruptData, "H5Dget_space " + where), H5Sclose);
  const int nd = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(nd, 0)));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return Shape(dims.begin(), dims.end());
}

}  // namespace

ExportSummary export_checkpoint(const fs::path& checkpoint, const fs::path& out, DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kBF16) {
    throw SettingError("export.dtype", dtype_name(dtype), "cannot be exported; use f32 or bf16");
  }
  const auto dir = resolve_checkpoint(checkpoint);
  if (!dir) throw CheckpointError(CheckpointErrorKind::kMissingFile, "no checkpoint found at " + checkpoint.string());
  const CheckpointMeta meta = read_meta_file((*dir / kMetaFileName).string());
  check_shard_files(meta, *dir);
  std::vector<std::unique_ptr<ShardFileReader>> readers;
  for (int s = 0; s < meta.layout.shard_ranks; ++s) {
    readers.push_back(std::make_unique<ShardFileReader>((*dir / shard_file_name(s)).string(), s));
    check_same_save(*readers.back(), meta, (*dir / kMetaFileName).string());
  }
  const fs::path tmp = out.string() + ".tmp";
  ExportSummary summary;
  summary.step = meta.progress.step;
  const std::int64_t bytes_needed =
      meta.layout.parameter_count() * static_cast<std::int64_t>(dtype_size(dtype)) + 65536;
  try {
    detail::Hdf5Guard guard;
    H5Id file = detail::create_file(tmp.string());
    detail::write_attribute(file.get(), "tessera_checkpoint_format", kCheckpointFormatVersion);
    detail::write_attribute(file.get(), "kind", std::string("export"));
    detail::write_attribute(file.get(), "step", meta.progress.step);
    detail::write_attribute(file.get(), "dtype", std::string(dtype_name(dtype)));
    detail::write_attribute(file.get(), "source", dir->string());
    {
      H5Id config = detail::create_group(file.get(), "config", tmp.string());
      for (const char* section : {"model", "run"}) {
        H5Id group = detail::create_group(config.get(), section, tmp.string());
        const auto& fields = std::string(section) == "model" ? meta.config.model() : meta.config.run();
        for (const auto& [key, value] : fields) detail::write_attribute(group.get(), key, value);
      }
    }
    H5Id model = detail::create_group(file.get(), "model", tmp.string());
    // Unit by unit: one read of the unit's flat buffer per shard piece, then every parameter in it.
    std::vector<float> flat, values;
    for (std::size_t u = 0; u < meta.layout.units.size(); ++u) {
      const UnitRecord& unit = meta.layout.units[u];
      flat.assign(static_cast<std::size_t>(unit.numel), 0.0f);
      std::int64_t at = 0;
      for (const ShardPiece& piece : meta.layout.locate(static_cast<int>(u), 0, unit.numel)) {
        readers[static_cast<std::size_t>(piece.shard)]->read(unit.name, kMasterDataset, DType::kF32,
                                                             {{piece.begin, piece.count, flat.data() + at}});
        at += piece.count;
      }
      for (const ParamRecord& p : meta.layout.params) {
        if (p.unit != static_cast<int>(u)) continue;
        values.assign(flat.begin() + p.offset, flat.begin() + p.offset + p.numel());
        write_parameter(model.get(), p, values, dtype, tmp.string());
        ++summary.parameters;
        summary.elements += p.numel();
      }
    }
    model.reset();
    check_status(file.close(), CheckpointErrorKind::kIo, "closing " + tmp.string());
    fsync_path(tmp);
    durable_rename(tmp, out);
  } catch (const CheckpointError& e) {
    std::error_code ec;
    fs::remove(tmp, ec);  // a failed export leaves nothing behind
    throw explain_write_failure(e, tmp, bytes_needed);
  }
  summary.bytes = static_cast<std::int64_t>(fs::file_size(out));
  return summary;
}

void load_exported_weights(ShardedEngine& engine, Communicator& world, const fs::path& file, const RunConfig& expected) {
  const auto& units = engine.units();
  std::vector<std::vector<float>> staging(units.size());
  run_and_agree(world, [&] {
    detail::Hdf5Guard guard;
    const std::string path = file.string();
    H5Id f = detail::open_file_read(path);
    const std::string kind =
        detail::has_attribute(f.get(), "kind") ? detail::read_string_attribute(f.get(), "kind", path) : "";
    if (kind != "export") {
      throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                            path + " is not a file written by `tessera_ckpt export` (kind '" + kind +
                                "'); export the checkpoint first");
    }
    if (detail::link_exists(f.get(), "config")) {
      RunConfig stored;
      H5Id config = detail::open_group(f.get(), "config", path);
      if (detail::link_exists(config.get(), "model")) {
        H5Id model = detail::open_group(config.get(), "model", path);
        for (const std::string& key : detail::attribute_names(model.get())) {
          stored.set_model(key, detail::read_string_attribute(model.get(), key, path + ":/config/model"));
        }
      }
      check_model_fields(stored, expected, path);
    }
    H5Id model = detail::open_group(f.get(), "model", path);
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
        const Shape shape = dataset_shape(dset.get(), where);
        if (shape != e.parameter->shape) {
          throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                                where + " has shape " + shape_string(shape) + " but this model's is " +
                                    shape_string(e.parameter->shape) + "; use the model options it was exported with");
        }
        const std::int64_t lo = std::max(begin, e.offset), hi = std::min(end, e.offset + e.numel);
        if (lo >= hi) continue;
        read_flat_range(dset.get(), shape, lo - e.offset, hi - e.offset, staging[u].data() + (lo - begin), where);
      }
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
