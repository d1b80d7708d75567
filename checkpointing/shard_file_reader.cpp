// Chunk-aligned range reads with checksum verification: pread of whole unfiltered chunks, or HDF5
// hyperslab reads.
#include "checkpointing/shard_file_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "checkpointing/chunk_pread.hpp"
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

// Bytes per H5Dread: a few chunks, verified right after they are copied, while they are still in
// the CPU's cache.
constexpr std::int64_t kRunBytes = std::int64_t{8} << 20;

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

CheckpointError mismatch(const std::string& where, std::int64_t c, std::int64_t chunk, std::int64_t length,
                         std::uint64_t got, std::uint64_t stored) {
  const std::int64_t clo = c * chunk, chi = std::min(length, clo + chunk);
  return CheckpointError(CheckpointErrorKind::kCorruptData,
                         where + " is corrupted: chunk " + std::to_string(c) + " (elements " + std::to_string(clo) +
                             ".." + std::to_string(chi - 1) + ") has xxh64 " + hex(got) + " but " + hex(stored) +
                             " was stored; resume from an earlier checkpoint");
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
    if (got != stored) throw mismatch(where, c, chunk, length, got, stored);
  }
}

// A state dataset of one unit, with its length and chunk size.
struct StateDataset {
  H5Id group, dset;
  std::int64_t length = 0, chunk = 0;
  std::string where;  // "<file>:/units/<unit>/<dataset>"
};

StateDataset open_state_dataset(hid_t file, const std::string& path, const std::string& unit,
                                const std::string& dataset) {
  StateDataset d;
  const std::string group_path = unit_group_path(unit);
  d.where = path + ":" + group_path + "/" + dataset;
  if (!detail::link_exists(file, "units") || !detail::link_exists(file, group_path)) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, path + " has no unit group " + group_path);
  }
  d.group = detail::open_group(file, group_path, path);
  d.dset = detail::open_dataset(d.group.get(), dataset, path + ":" + group_path);
  d.length = detail::dataset_length(d.dset.get(), d.where);
  d.chunk = detail::read_int_attribute(d.dset.get(), "chunk_elements", d.where);
  return d;
}

// The chunks the ranges touch, in order, each once. Throws kCorruptData for a range beyond the
// dataset.
std::vector<std::int64_t> needed_chunks(const std::vector<ElementRange>& ranges, const StateDataset& d) {
  std::vector<std::int64_t> needed;
  for (const ElementRange& r : ranges) {
    if (r.count <= 0) continue;
    if (r.begin < 0 || r.begin + r.count > d.length) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            d.where + " has " + std::to_string(d.length) + " elements; elements [" +
                                std::to_string(r.begin) + ", " + std::to_string(r.begin + r.count) +
                                ") were expected by the checkpoint's layout");
    }
    for (std::int64_t c = r.begin / d.chunk; c <= (r.begin + r.count - 1) / d.chunk; ++c) needed.push_back(c);
  }
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  return needed;
}

// Where chunk c is stored in the file, and its stored bytes; nullopt when it has no storage (never
// written) or HDF5 cannot say.
struct ChunkStorage {
  std::int64_t address = 0, bytes = 0;
};

std::optional<ChunkStorage> chunk_storage(const StateDataset& d, std::int64_t c) {
  const hsize_t offset[1] = {static_cast<hsize_t>(c * d.chunk)};
  unsigned filter_mask = 0;
  haddr_t address = HADDR_UNDEF;
  hsize_t bytes = 0;
  if (H5Dget_chunk_info_by_coord(d.dset.get(), offset, &filter_mask, &address, &bytes) < 0 || address == HADDR_UNDEF) {
    return std::nullopt;
  }
  return ChunkStorage{static_cast<std::int64_t>(address), static_cast<std::int64_t>(bytes)};
}

// Whether the dataset's chunks hold its elements as they are in memory: no filters (compression),
// and the memory type checked equal to the stored one by the caller.
bool stored_raw(const StateDataset& d) {
  H5Id dcpl(H5Dget_create_plist(d.dset.get()), H5Pclose);
  return dcpl.valid() && H5Pget_nfilters(dcpl.get()) == 0;
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
  raw_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);  // -1: every read goes through HDF5
}

ShardFileReader::~ShardFileReader() {
  if (raw_fd_ >= 0) ::close(raw_fd_);
}

void ShardFileReader::read(const std::string& unit, const std::string& dataset, DType dtype,
                           std::vector<ElementRange> ranges) {
  read_chunks(unit, dataset, dtype, ranges, true);
}

void ShardFileReader::verify(const std::string& unit, const std::string& dataset, DType dtype,
                             const std::vector<ElementRange>& ranges) {
  read_chunks(unit, dataset, dtype, ranges, false);
}

void ShardFileReader::read_chunks(const std::string& unit, const std::string& dataset, DType dtype,
                                  const std::vector<ElementRange>& ranges, bool keep) {
  if (ranges.empty()) return;
  std::optional<detail::Hdf5Guard> guard(std::in_place);
  const std::size_t element_bytes = dtype_size(dtype);
  const StateDataset d = open_state_dataset(file_.get(), path_, unit, dataset);
  const std::string& where = d.where;
  const std::int64_t length = d.length, chunk = d.chunk;
  const H5Id type = detail::state_hdf5_type(dtype);
  {
    H5Id stored(check_id(H5Dget_type(d.dset.get()), CheckpointErrorKind::kCorruptData, "H5Dget_type " + where), H5Tclose);
    if (H5Tequal(stored.get(), type.get()) <= 0) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            where + " is not stored as " + dtype_name(dtype) + " elements as the checkpoint's "
                                    "metadata says");
    }
  }
  const std::vector<std::uint64_t> sums =
      detail::read_u64_vector(d.group.get(), dataset + kChecksumSuffix, path_ + ":" + unit_group_path(unit));
  const std::int64_t chunks = chunk > 0 ? (length + chunk - 1) / chunk : -1;
  if (chunks < 0 || static_cast<std::int64_t>(sums.size()) != chunks) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          where + ": checksum table has " + std::to_string(sums.size()) + " entries for " +
                              std::to_string(chunks) + " chunks");
  }
  const std::vector<std::int64_t> needed = needed_chunks(ranges, d);
  auto at = [element_bytes](void* base, std::int64_t elements) {
    return static_cast<std::byte*>(base) + static_cast<std::size_t>(elements) * element_bytes;
  };
  // The range that holds elements [lo, hi) whole, if one does and its values are kept.
  auto direct_range = [&](std::int64_t lo, std::int64_t hi) -> const ElementRange* {
    if (!keep) return nullptr;
    for (const ElementRange& r : ranges) {
      if (r.begin <= lo && hi <= r.begin + r.count) return &r;
    }
    return nullptr;
  };
  // Copies the kept ranges' parts of elements [lo, hi) (held in `data`) other than `direct`'s.
  auto copy_out = [&](const std::byte* data, std::int64_t lo, std::int64_t hi, const ElementRange* direct) {
    if (!keep) return;
    for (const ElementRange& r : ranges) {
      const std::int64_t a = std::max(lo, r.begin), b = std::min(hi, r.begin + r.count);
      if (a >= b || &r == direct) continue;
      std::memcpy(at(r.out, a - r.begin), data + static_cast<std::size_t>(a - lo) * element_bytes,
                  static_cast<std::size_t>(b - a) * element_bytes);
    }
  };

  // Whole chunks stored as they are in memory: pread straight to where they go, in parallel, each
  // hashed as it arrives — outside the HDF5 lock.
  std::vector<ChunkPread> preads;
  if (raw_fd_ >= 0 && stored_raw(d)) {
    const auto full_bytes = chunk * static_cast<std::int64_t>(element_bytes);
    for (std::int64_t c : needed) {
      const std::optional<ChunkStorage> stored = chunk_storage(d, c);
      if (!stored || stored->bytes != full_bytes) {
        preads.clear();  // a chunk HDF5 must read itself: all of them through HDF5
        break;
      }
      const std::int64_t lo = c * chunk, hi = std::min(length, lo + chunk);
      const ElementRange* direct = direct_range(lo, hi);
      preads.push_back({stored->address, (hi - lo) * static_cast<std::int64_t>(element_bytes),
                        direct != nullptr ? at(direct->out, lo - direct->begin) : nullptr});
    }
  }
  if (!preads.empty()) {
    guard.reset();
    const std::vector<ChunkResult> results =
        pread_chunks(raw_fd_, preads, [&](std::size_t i, const std::byte* data, const ChunkResult& r) {
          const std::int64_t c = needed[i], lo = c * chunk, hi = std::min(length, lo + chunk);
          if (!r.error.empty() || r.xxh64 != sums[static_cast<std::size_t>(c)]) return;
          copy_out(data, lo, hi, direct_range(lo, hi));
        });
    for (std::size_t i = 0; i < needed.size(); ++i) {
      const std::int64_t c = needed[i];
      if (!results[i].error.empty()) {
        throw CheckpointError(CheckpointErrorKind::kCorruptData,
                              "reading chunk " + std::to_string(c) + " of " + where + ": " + results[i].error);
      }
      if (results[i].xxh64 != sums[static_cast<std::size_t>(c)]) {
        throw mismatch(where, c, chunk, length, results[i].xxh64, sums[static_cast<std::size_t>(c)]);
      }
      bytes_read_ += preads[i].bytes;
    }
    return;
  }

  // Otherwise HDF5 reads runs of consecutive chunks (decompressing them when they are), each run
  // straight into its destination when one kept range holds it, else through buffer_.
  const std::int64_t chunks_per_run =
      std::max<std::int64_t>(1, kRunBytes / (chunk * static_cast<std::int64_t>(element_bytes)));
  H5Id file_space(check_id(H5Dget_space(d.dset.get()), CheckpointErrorKind::kCorruptData, "H5Dget_space " + where),
                  H5Sclose);
  for (std::size_t i = 0; i < needed.size();) {
    std::size_t j = i + 1;
    while (j < needed.size() && needed[j] == needed[j - 1] + 1 && static_cast<std::int64_t>(j - i) < chunks_per_run) ++j;
    const std::int64_t lo = needed[i] * chunk, hi = std::min(length, (needed[j - 1] + 1) * chunk);
    const ElementRange* direct = direct_range(lo, hi);
    std::byte* target = nullptr;
    if (direct != nullptr) {
      target = at(direct->out, lo - direct->begin);
    } else {
      buffer_.resize(static_cast<std::size_t>(hi - lo) * element_bytes);
      target = buffer_.data();
    }
    read_run(d.dset.get(), file_space.get(), type.get(), lo, hi, target, where);
    bytes_read_ += (hi - lo) * static_cast<std::int64_t>(element_bytes);
    verify_chunks(target, element_bytes, lo, needed[i], needed[j - 1] + 1, chunk, length, sums, where);
    copy_out(target, lo, hi, direct);
    i = j;
  }
}

}  // namespace tessera
