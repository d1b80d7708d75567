// Chunk-aligned range reads with checksum verification.
#include "checkpointing/shard_file_reader.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "checkpointing/checkpoint_paths.hpp"
#include "checkpointing/checksum.hpp"
#include "checkpointing/meta_digests.hpp"
#include "checkpointing/shard_file_writer.hpp"
#include "checkpointing/state_file_types.hpp"

namespace tessera {
namespace {

using detail::check_id;
using detail::check_status;
using detail::H5Id;

constexpr std::int64_t kMaxChunksPerRead = 16;

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// Reads elements [lo, hi) of a 1-D dataset into out, as `type` elements.
void read_run(hid_t dset, hid_t file_space, hid_t type, std::int64_t lo, std::int64_t hi, void* out,
              const std::string& where) {
  const hsize_t start[1] = {static_cast<hsize_t>(lo)}, count[1] = {static_cast<hsize_t>(hi - lo)};
  check_status(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, count, nullptr), CheckpointErrorKind::kIo,
               "selecting in " + where);
  H5Id mem_space(check_id(H5Screate_simple(1, count, nullptr), CheckpointErrorKind::kIo, "H5Screate_simple"), H5Sclose);
  check_status(H5Dread(dset, type, mem_space.get(), file_space, H5P_DEFAULT, out),
               CheckpointErrorKind::kCorruptData,
               "reading elements [" + std::to_string(lo) + ", " + std::to_string(hi) + ") of " + where);
}

// Checks chunks [first, last) held in `data` (which starts at element `lo`; elements of
// `element_bytes`) against `sums`.
void verify_chunks(const std::byte* data, std::size_t element_bytes, std::int64_t lo, std::int64_t first,
                   std::int64_t last, std::int64_t chunk, std::int64_t length, const std::vector<std::uint64_t>& sums,
                   const std::string& where) {
  std::vector<std::uint64_t> actual(static_cast<std::size_t>(last - first));
#pragma omp parallel for schedule(static)
  for (std::int64_t c = first; c < last; ++c) {
    const std::int64_t clo = c * chunk, chi = std::min(length, clo + chunk);
    actual[static_cast<std::size_t>(c - first)] =
        xxh64(data + static_cast<std::size_t>(clo - lo) * element_bytes, static_cast<std::size_t>(chi - clo) * element_bytes);
  }
  for (std::int64_t c = first; c < last; ++c) {
    const std::uint64_t got = actual[static_cast<std::size_t>(c - first)], stored = sums[static_cast<std::size_t>(c)];
    if (got == stored) continue;
    const std::int64_t clo = c * chunk, chi = std::min(length, clo + chunk);
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          where + " is corrupted: chunk " + std::to_string(c) + " (elements " + std::to_string(clo) +
                              ".." + std::to_string(chi - 1) + ") has xxh64 " + hex(got) + " but " + hex(stored) +
                              " was stored; resume from an earlier checkpoint");
  }
}

}  // namespace

ShardFileReader::ShardFileReader(std::string path, int shard) : path_(std::move(path)) {
  detail::Hdf5Guard guard;
  file_ = detail::open_file_read(path_);
  format_version_ = detail::read_int_attribute(file_.get(), "tessera_checkpoint_format", path_);
  check_readable_format(format_version_, path_);
  const std::int64_t stored = detail::read_int_attribute(file_.get(), "shard", path_);
  if (stored != shard) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, path_ + " holds shard " + std::to_string(stored) +
                                                                 ", expected shard " + std::to_string(shard) +
                                                                 ": shard files were renamed or mixed up");
  }
  step_ = detail::read_int_attribute(file_.get(), "step", path_);
  if (format_version_ >= 3) {
    const std::string id = detail::read_string_attribute(file_.get(), "save_id", path_);
    if (!detail::parse_hex64(id, save_id_)) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            path_ + " is corrupted: its save_id '" + id + "' is not 16 hex digits");
    }
  }
}

void ShardFileReader::read(const std::string& unit, const std::string& dataset, DType dtype,
                           std::vector<ElementRange> ranges) {
  if (ranges.empty()) return;
  detail::Hdf5Guard guard;
  const std::size_t element_bytes = dtype_size(dtype);
  const std::string group_path = unit_group_path(unit);
  const std::string where = path_ + ":" + group_path + "/" + dataset;
  if (!detail::link_exists(file_.get(), "units") || !detail::link_exists(file_.get(), group_path)) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, path_ + " has no unit group " + group_path);
  }
  H5Id group = detail::open_group(file_.get(), group_path, path_);
  H5Id dset = detail::open_dataset(group.get(), dataset, path_ + ":" + group_path);
  const std::int64_t length = detail::dataset_length(dset.get(), where);
  const H5Id type = detail::state_hdf5_type(dtype);
  {
    H5Id stored(check_id(H5Dget_type(dset.get()), CheckpointErrorKind::kCorruptData, "H5Dget_type " + where), H5Tclose);
    if (H5Tequal(stored.get(), type.get()) <= 0) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            where + " is not stored as " + dtype_name(dtype) + " elements as the checkpoint's "
                                    "metadata says");
    }
  }
  const std::int64_t chunk = detail::read_int_attribute(dset.get(), "chunk_elements", where);
  const std::vector<std::uint64_t> sums =
      detail::read_u64_vector(group.get(), dataset + kChecksumSuffix, path_ + ":" + group_path);
  const std::int64_t chunks = chunk > 0 ? (length + chunk - 1) / chunk : -1;
  if (chunks < 0 || static_cast<std::int64_t>(sums.size()) != chunks) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          where + ": checksum table has " + std::to_string(sums.size()) + " entries for " +
                              std::to_string(chunks) + " chunks");
  }
  // The chunks the ranges touch, in order, read in runs of consecutive chunks.
  std::vector<std::int64_t> needed;
  for (const ElementRange& r : ranges) {
    if (r.count <= 0) continue;
    if (r.begin < 0 || r.begin + r.count > length) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            where + " has " + std::to_string(length) + " elements; elements [" +
                                std::to_string(r.begin) + ", " + std::to_string(r.begin + r.count) +
                                ") were expected by the checkpoint's layout");
    }
    for (std::int64_t c = r.begin / chunk; c <= (r.begin + r.count - 1) / chunk; ++c) needed.push_back(c);
  }
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  H5Id file_space(check_id(H5Dget_space(dset.get()), CheckpointErrorKind::kCorruptData, "H5Dget_space " + where),
                  H5Sclose);
  for (std::size_t i = 0; i < needed.size();) {
    std::size_t j = i + 1;
    while (j < needed.size() && needed[j] == needed[j - 1] + 1 && static_cast<std::int64_t>(j - i) < kMaxChunksPerRead) ++j;
    const std::int64_t lo = needed[i] * chunk, hi = std::min(length, (needed[j - 1] + 1) * chunk);
    // A run inside one range is read straight into its destination; otherwise through buffer_.
    auto at = [element_bytes](void* base, std::int64_t elements) {
      return static_cast<std::byte*>(base) + static_cast<std::size_t>(elements) * element_bytes;
    };
    std::byte* target = nullptr;
    const ElementRange* direct = nullptr;
    for (const ElementRange& r : ranges) {
      if (direct == nullptr && r.begin <= lo && hi <= r.begin + r.count) {
        direct = &r;
        target = at(r.out, lo - r.begin);
      }
    }
    if (target == nullptr) {
      buffer_.resize(static_cast<std::size_t>(hi - lo) * element_bytes);
      target = buffer_.data();
    }
    read_run(dset.get(), file_space.get(), type.get(), lo, hi, target, where);
    bytes_read_ += (hi - lo) * static_cast<std::int64_t>(element_bytes);
    verify_chunks(target, element_bytes, lo, needed[i], needed[j - 1] + 1, chunk, length, sums, where);
    for (const ElementRange& r : ranges) {
      const std::int64_t a = std::max(lo, r.begin), b = std::min(hi, r.begin + r.count);
      if (a >= b || &r == direct) continue;
      std::memcpy(at(r.out, a - r.begin), target + static_cast<std::size_t>(a - lo) * element_bytes,
                  static_cast<std::size_t>(b - a) * element_bytes);
    }
    i = j;
  }
}

}  // namespace tessera
