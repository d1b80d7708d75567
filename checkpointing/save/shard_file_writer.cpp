// Shard file writing: chunked state datasets plus per-chunk checksums, then fsync.
#include "tessera/checkpointing/save/shard_file_writer.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/checksum.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/checkpointing/format/meta_digests.hpp"
#include "tessera/checkpointing/format/state_file_types.hpp"
#include "tessera/checkpointing/save/disk_space.hpp"
#include "tessera/core/setting_error.hpp"

namespace tessera {
namespace {

using detail::check_id;
using detail::check_status;
using detail::H5Id;

// The checksum of every chunk's bytes (elements of `element_bytes` each).
std::vector<std::uint64_t> chunk_checksums(ChunkChecksum kind, const std::byte* data, std::int64_t n,
                                           std::int64_t chunk, std::size_t element_bytes) {
  const std::int64_t chunks = (n + chunk - 1) / chunk;
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(chunks));
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t lo = c * chunk, hi = std::min(n, lo + chunk);
    sums[static_cast<std::size_t>(c)] = chunk_checksum(kind, data + static_cast<std::size_t>(lo) * element_bytes,
                                                       static_cast<std::size_t>(hi - lo) * element_bytes);
  }
  return sums;
}

// Elements per chunk for a dataset of `n` elements: as few chunks as `largest` allows, of one size
// rounded up to kChunkAlignment elements (at most `largest` and `n`). HDF5 stores every chunk whole, so a
// short last chunk would leave dead bytes that a load sweeping the file reads past; and chunks whose
// bytes are a multiple of a few KiB keep the destinations of whole-chunk reads aligned, which the
// kernel's copy out of the page cache needs to run at full speed.
constexpr std::int64_t kChunkAlignment = 1024;

std::int64_t equal_chunk_elements(std::int64_t n, std::int64_t largest) {
  const std::int64_t most = std::max<std::int64_t>(1, largest);
  if (n <= 0) return 1;
  const std::int64_t chunks = (n + most - 1) / most;
  const std::int64_t even = (n + chunks - 1) / chunks;
  return std::min({n, most, (even + kChunkAlignment - 1) / kChunkAlignment * kChunkAlignment});
}

void write_state_dataset(hid_t group, const StateShard& state, const UnitShardData& unit,
                         const ShardWriteOptions& options, const std::string& where) {
  const std::string& name = state.name;
  const std::int64_t n = state.values(unit.shard_numel);
  const std::int64_t chunk = equal_chunk_elements(n, options.chunk_elements);
  const hsize_t dims[1] = {static_cast<hsize_t>(n)};
  const hsize_t chunk_dims[1] = {static_cast<hsize_t>(chunk)};
  H5Id space(check_id(H5Screate_simple(1, dims, nullptr), CheckpointErrorKind::kIo, "H5Screate_simple"), H5Sclose);
  H5Id dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), CheckpointErrorKind::kIo, "H5Pcreate"), H5Pclose);
  check_status(H5Pset_chunk(dcpl.get(), 1, chunk_dims), CheckpointErrorKind::kIo, "H5Pset_chunk");
  if (options.compression == CheckpointCompression::kDeflate) {
    check_status(H5Pset_shuffle(dcpl.get()), CheckpointErrorKind::kIo, "H5Pset_shuffle");
    check_status(H5Pset_deflate(dcpl.get(), 1), CheckpointErrorKind::kIo, "H5Pset_deflate");
  }
  const std::string what = where + "/" + name;
  const H5Id type = detail::state_hdf5_type(state.dtype);
  H5Id dset(check_id(H5Dcreate2(group, name.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                     CheckpointErrorKind::kIo, "creating " + what),
            H5Dclose);
  check_status(H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, state.data), CheckpointErrorKind::kIo,
               "writing " + what);
  detail::write_attribute(dset.get(), "dtype", std::string(dtype_name(state.dtype)));
  detail::write_attribute(dset.get(), "elements_per_value", state.elements_per_value);
  detail::write_attribute(dset.get(), "unit", unit.unit);
  detail::write_attribute(dset.get(), "offset", unit.offset);
  detail::write_attribute(dset.get(), "unit_numel", unit.unit_numel);
  detail::write_attribute(dset.get(), "chunk_elements", chunk);
  detail::write_vector(group, checksum_table_name(name, options.checksum),
                       chunk_checksums(options.checksum, static_cast<const std::byte*>(state.data), n, chunk,
                                       dtype_size(state.dtype)));
}

// Bytes of state the snapshot holds (what the shard file needs, before HDF5's own metadata).
std::int64_t snapshot_bytes(const ShardSnapshot& snapshot) {
  std::int64_t bytes = 0;
  for (const UnitShardData& unit : snapshot.units) {
    for (const StateShard& state : unit.states) {
      bytes += state.values(unit.shard_numel) * static_cast<std::int64_t>(dtype_size(state.dtype));
    }
  }
  return bytes;
}

}  // namespace

CheckpointCompression parse_checkpoint_compression(const std::string& text) {
  if (text == "none") return CheckpointCompression::kNone;
  if (text == "deflate") return CheckpointCompression::kDeflate;
  throw SettingError("checkpoint.compression", text, "is not known; use none or deflate");
}

const char* checkpoint_compression_name(CheckpointCompression compression) {
  return compression == CheckpointCompression::kDeflate ? "deflate" : "none";
}

std::string unit_group_path(const std::string& unit) { return "/units/" + unit; }

std::int64_t write_shard_file(const std::string& path, const ShardSnapshot& snapshot, int shard, int shard_ranks,
                              std::int64_t step, std::uint64_t save_id, const ShardWriteOptions& options) {
  try {
    detail::Hdf5Guard guard;
    H5Id file = detail::create_file(path);
    detail::write_attribute(file.get(), "tessera_checkpoint_format", kPlainFormat);
    detail::write_attribute(file.get(), "kind", std::string("shard"));
    detail::write_attribute(file.get(), "shard", static_cast<std::int64_t>(shard));
    detail::write_attribute(file.get(), "shard_ranks", static_cast<std::int64_t>(shard_ranks));
    detail::write_attribute(file.get(), "step", step);
    detail::write_attribute(file.get(), "save_id", detail::hex64(save_id));
    detail::write_attribute(file.get(), "chunk_checksum", std::string(chunk_checksum_name(options.checksum)));
    H5Id units = detail::create_group(file.get(), "units", path);
    bool first = true;
    for (const UnitShardData& unit : snapshot.units) {
      H5Id group = detail::create_group(units.get(), unit.unit, path);
      const std::string where = path + ":" + unit_group_path(unit.unit);
      for (const StateShard& state : unit.states) {
        write_state_dataset(group.get(), state, unit, options, where);
        if (first && options.after_first_dataset) {
          H5Fflush(file.get(), H5F_SCOPE_LOCAL);
          options.after_first_dataset();
        }
        first = false;
      }
    }
    units.reset();
    check_status(file.close(), CheckpointErrorKind::kIo, "closing " + path);
    fsync_path(path);
  } catch (const CheckpointError& e) {
    throw explain_write_failure(e, path, snapshot_bytes(snapshot));
  }
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw CheckpointError(CheckpointErrorKind::kIo, "cannot stat " + path + ": " + ec.message());
  return static_cast<std::int64_t>(size);
}

}  // namespace tessera
