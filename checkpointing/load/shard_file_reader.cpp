// Chunk-aligned range reads with checksum verification: pread of whole unfiltered chunks, or HDF5
// hyperslab reads.
#include "tessera/checkpointing/load/shard_file_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>

#include "tessera/core/hex64.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/checksum.hpp"
#include "tessera/checkpointing/format/meta_digests.hpp"
#include "tessera/checkpointing/format/state_file_types.hpp"
#include "tessera/checkpointing/load/chunk_pread.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"

namespace tessera {
namespace {

using detail::check_id;
using detail::check_status;
using detail::H5Id;

// Bytes per H5Dread: a few chunks, verified right after they are copied, while they are still in
// the CPU's cache.
constexpr std::int64_t kRunBytes = std::int64_t{8} << 20;


// Reads elements [lo, hi) of a 1-D dataset into out, as `type` elements.
void read_run(hid_t dset, hid_t file_space, hid_t type, std::int64_t lo, std::int64_t hi, void* out,
              const std::string& where) {
  const hsize_t start[1] = {static_cast<hsize_t>(lo)}, count[1] = {static_cast<hsize_t>(hi - lo)};
  check_status(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, count, nullptr),
               CheckpointErrorKind::kIo, "selecting in " + where);
  H5Id mem_space(check_id(H5Screate_simple(1, count, nullptr), CheckpointErrorKind::kIo, "H5Screate_simple"), H5Sclose);
  check_status(H5Dread(dset, type, mem_space.get(), file_space, H5P_DEFAULT, out), CheckpointErrorKind::kCorruptData,
               "reading elements [" + std::to_string(lo) + ", " + std::to_string(hi) + ") of " + where);
}

CheckpointError mismatch(const std::string& where, ChunkChecksum checksum, std::int64_t c, std::int64_t chunk,
                         std::int64_t length, std::uint64_t got, std::uint64_t stored) {
  const std::int64_t clo = c * chunk, chi = std::min(length, clo + chunk);
  return CheckpointError(CheckpointErrorKind::kCorruptData,
                         where + " is corrupted: chunk " + std::to_string(c) + " (elements " + std::to_string(clo) +
                             ".." + std::to_string(chi - 1) + ") has " + chunk_checksum_name(checksum) + " " + hex64(got) +
                             " but " + hex64(stored) +
                             " was stored; resume from an earlier checkpoint");
}

// Checks chunks [first, last) held in `data` (which starts at element `lo`; elements of
// `element_bytes`) against `sums`, on every OpenMP thread.
void verify_chunks(ChunkChecksum checksum, const std::byte* data, std::size_t element_bytes, std::int64_t lo,
                   std::int64_t first, std::int64_t last, std::int64_t chunk, std::int64_t length,
                   const std::vector<std::uint64_t>& sums, const std::string& where) {
  std::vector<std::uint64_t> actual(static_cast<std::size_t>(last - first));
#pragma omp parallel for schedule(static)
  for (std::int64_t c = first; c < last; ++c) {
    const std::int64_t clo = c * chunk, chi = std::min(length, clo + chunk);
    actual[static_cast<std::size_t>(c - first)] =
        chunk_checksum(checksum, data + static_cast<std::size_t>(clo - lo) * element_bytes,
                       static_cast<std::size_t>(chi - clo) * element_bytes);
  }
  for (std::int64_t c = first; c < last; ++c) {
    const std::uint64_t got = actual[static_cast<std::size_t>(c - first)], stored = sums[static_cast<std::size_t>(c)];
    if (got != stored) throw mismatch(where, checksum, c, chunk, length, got, stored);
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
      throw CheckpointError(CheckpointErrorKind::kCorruptData, d.where + " has " + std::to_string(d.length) +
                                                                   " elements; elements [" + std::to_string(r.begin) +
                                                                   ", " + std::to_string(r.begin + r.count) +
                                                                   ") were expected by the checkpoint's layout");
    }
    for (std::int64_t c = r.begin / d.chunk; c <= (r.begin + r.count - 1) / d.chunk; ++c) needed.push_back(c);
  }
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  return needed;
}

// The checksum of the file's chunks: XXH64 in format 3, the one its attribute chunk_checksum names
// from format 4 on.
ChunkChecksum stored_chunk_checksum(hid_t file, std::int64_t format, const std::string& path) {
  if (format < 4) return ChunkChecksum::kXxh64;
  if (!detail::has_attribute(file, "chunk_checksum")) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, path + " is corrupted: it has format version " +
                                                                 std::to_string(format) +
                                                                 " but no chunk_checksum attribute; resume from an "
                                                                 "earlier checkpoint");
  }
  const std::string name = detail::read_string_attribute(file, "chunk_checksum", path);
  const std::optional<ChunkChecksum> checksum = parse_chunk_checksum(name);
  if (!checksum) {
    throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                          path + " names chunk checksum '" + name +
                              "', which this build does not know (it verifies xxh64 and xxh3_64): resume it with the "
                              "Tessera version that wrote it");
  }
  return *checksum;
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

// What read_all knows of one dataset once HDF5 told it (no HDF5 handles: the chunks are read
// outside the HDF5 lock).
struct DatasetPlan {
  const DatasetRanges* request = nullptr;
  std::string where;
  std::int64_t length = 0, chunk = 0;
  std::size_t element_bytes = 0;
  std::vector<std::uint64_t> sums;    // per chunk
  std::vector<std::int64_t> needed;   // chunk indices, ascending
  bool raw = false;                   // every needed chunk is read with pread
  std::vector<std::int64_t> address;  // raw: per needed chunk, where it is stored

  std::byte* at(void* base, std::int64_t elements) const {
    return static_cast<std::byte*>(base) + static_cast<std::size_t>(elements) * element_bytes;
  }
  // The kept range that holds elements [lo, hi) whole, if one does.
  const ElementRange* direct_range(std::int64_t lo, std::int64_t hi, bool keep) const {
    if (!keep) return nullptr;
    for (const ElementRange& r : request->ranges) {
      if (r.begin <= lo && hi <= r.begin + r.count) return &r;
    }
    return nullptr;
  }
  // Copies the kept ranges' parts of elements [lo, hi) (held in `data`) other than `direct`'s.
  void copy_out(const std::byte* data, std::int64_t lo, std::int64_t hi, const ElementRange* direct, bool keep) const {
    if (!keep) return;
    for (const ElementRange& r : request->ranges) {
      const std::int64_t a = std::max(lo, r.begin), b = std::min(hi, r.begin + r.count);
      if (a >= b || &r == direct) continue;
      std::memcpy(at(r.out, a - r.begin), data + static_cast<std::size_t>(a - lo) * element_bytes,
                  static_cast<std::size_t>(b - a) * element_bytes);
    }
  }
  std::int64_t chunk_end(std::int64_t c) const { return std::min(length, (c + 1) * chunk); }
};

// Opens `r`'s dataset in `file`, checks its type and checksum table and finds its needed chunks;
// `raw_fd` >= 0: also where they are stored, when every one is stored as it is in memory.
DatasetPlan plan_dataset(hid_t file, const std::string& path, ChunkChecksum checksum, const DatasetRanges& r,
                         bool raw_possible) {
  DatasetPlan p;
  p.request = &r;
  p.element_bytes = dtype_size(r.dtype);
  const StateDataset d = open_state_dataset(file, path, r.unit, r.dataset);
  p.where = d.where;
  p.length = d.length;
  p.chunk = d.chunk;
  const H5Id type = detail::state_hdf5_type(r.dtype);
  {
    H5Id stored(check_id(H5Dget_type(d.dset.get()), CheckpointErrorKind::kCorruptData, "H5Dget_type " + p.where),
                H5Tclose);
    if (H5Tequal(stored.get(), type.get()) <= 0) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData, p.where + " is not stored as " + dtype_name(r.dtype) +
                                                                   " elements as the checkpoint's "
                                                                   "metadata says");
    }
  }
  p.sums = detail::read_u64_vector(d.group.get(), checksum_table_name(r.dataset, checksum),
                                   path + ":" + unit_group_path(r.unit));
  const std::int64_t chunks = p.chunk > 0 ? (p.length + p.chunk - 1) / p.chunk : -1;
  if (chunks < 0 || static_cast<std::int64_t>(p.sums.size()) != chunks) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, p.where + ": checksum table has " +
                                                                 std::to_string(p.sums.size()) + " entries for " +
                                                                 std::to_string(chunks) + " chunks");
  }
  p.needed = needed_chunks(r.ranges, d);
  if (!raw_possible || !stored_raw(d)) return p;
  const auto full_bytes = p.chunk * static_cast<std::int64_t>(p.element_bytes);
  for (std::int64_t c : p.needed) {
    const std::optional<ChunkStorage> stored = chunk_storage(d, c);
    if (!stored || stored->bytes != full_bytes) {
      p.address.clear();  // a chunk HDF5 must read itself: all of them through HDF5
      return p;
    }
    p.address.push_back(stored->address);
  }
  p.raw = true;
  return p;
}

// Reads `p`'s chunks through HDF5 (through `buffer` where no kept range holds a run whole) and
// verifies them; returns the bytes read.
std::int64_t read_through_hdf5(hid_t file, const std::string& path, ChunkChecksum checksum, const DatasetPlan& p,
                               bool keep, std::vector<std::byte>& buffer) {
  detail::Hdf5Guard guard;
  const DatasetRanges& r = *p.request;
  const StateDataset d = open_state_dataset(file, path, r.unit, r.dataset);
  const H5Id type = detail::state_hdf5_type(r.dtype);
  const std::int64_t chunks_per_run =
      std::max<std::int64_t>(1, kRunBytes / (p.chunk * static_cast<std::int64_t>(p.element_bytes)));
  H5Id file_space(check_id(H5Dget_space(d.dset.get()), CheckpointErrorKind::kCorruptData, "H5Dget_space " + p.where),
                  H5Sclose);
  const std::vector<std::int64_t>& needed = p.needed;
  std::int64_t bytes = 0;
  for (std::size_t i = 0; i < needed.size();) {
    std::size_t j = i + 1;
    while (j < needed.size() && needed[j] == needed[j - 1] + 1 && static_cast<std::int64_t>(j - i) < chunks_per_run)
      ++j;
    const std::int64_t lo = needed[i] * p.chunk, hi = p.chunk_end(needed[j - 1]);
    const ElementRange* direct = p.direct_range(lo, hi, keep);
    std::byte* target = nullptr;
    if (direct != nullptr) {
      target = p.at(direct->out, lo - direct->begin);
    } else {
      buffer.resize(static_cast<std::size_t>(hi - lo) * p.element_bytes);
      target = buffer.data();
    }
    read_run(d.dset.get(), file_space.get(), type.get(), lo, hi, target, p.where);
    bytes += (hi - lo) * static_cast<std::int64_t>(p.element_bytes);
    verify_chunks(checksum, target, p.element_bytes, lo, needed[i], needed[j - 1] + 1, p.chunk, p.length, p.sums, p.where);
    p.copy_out(target, lo, hi, direct, keep);
    i = j;
  }
  return bytes;
}

}  // namespace

ShardFileReader::ShardFileReader(std::string path, int shard) : path_(std::move(path)) {
  detail::Hdf5Guard guard;
  file_ = detail::open_file_read(path_);
  const std::int64_t format = detail::read_int_attribute(file_.get(), "tessera_checkpoint_format", path_);
  check_readable_format(format, path_);
  checksum_ = stored_chunk_checksum(file_.get(), format, path_);
  const std::int64_t stored = detail::read_int_attribute(file_.get(), "shard", path_);
  if (stored != shard) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, path_ + " holds shard " + std::to_string(stored) +
                                                                 ", expected shard " + std::to_string(shard) +
                                                                 ": shard files were renamed or mixed up");
  }
  step_ = detail::read_int_attribute(file_.get(), "step", path_);
  const std::string id = detail::read_string_attribute(file_.get(), "save_id", path_);
  if (!detail::parse_hex64(id, save_id_)) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          path_ + " is corrupted: its save_id '" + id + "' is not 16 hex digits");
  }
  raw_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);  // -1: every read goes through HDF5
}

ShardFileReader::~ShardFileReader() {
  if (raw_fd_ >= 0) ::close(raw_fd_);
}

void ShardFileReader::read(const std::string& unit, const std::string& dataset, DType dtype,
                           std::vector<ElementRange> ranges) {
  const DatasetRanges one{unit, dataset, dtype, std::move(ranges)};
  read_all({&one, 1}, true);
}

void ShardFileReader::verify(const std::string& unit, const std::string& dataset, DType dtype,
                             const std::vector<ElementRange>& ranges) {
  const DatasetRanges one{unit, dataset, dtype, ranges};
  read_all({&one, 1}, false);
}

void ShardFileReader::read(std::span<const DatasetRanges> reads) { read_all(reads, true); }

void ShardFileReader::verify(std::span<const DatasetRanges> reads) { read_all(reads, false); }

void ShardFileReader::read_all(std::span<const DatasetRanges> reads, bool keep) {
  std::vector<DatasetPlan> plans;
  {
    detail::Hdf5Guard guard;
    for (const DatasetRanges& r : reads) {
      if (!r.ranges.empty()) plans.push_back(plan_dataset(file_.get(), path_, checksum_, r, raw_fd_ >= 0));
    }
  }

  // The whole chunks stored as they are in memory, of every dataset, in the order they lie in the
  // file (one sweep over it for the disk): pread straight to where they go, several at once, each
  // hashed as it arrives — outside the HDF5 lock.
  struct Source {
    std::size_t plan, index;  // plans[plan].needed[index]
  };
  std::vector<Source> sources;
  for (std::size_t p = 0; p < plans.size(); ++p) {
    if (!plans[p].raw) continue;
    for (std::size_t i = 0; i < plans[p].needed.size(); ++i) sources.push_back({p, i});
  }
  std::sort(sources.begin(), sources.end(), [&](const Source& a, const Source& b) {
    return plans[a.plan].address[a.index] < plans[b.plan].address[b.index];
  });
  std::vector<ChunkPread> preads;
  preads.reserve(sources.size());
  for (const Source& s : sources) {
    const DatasetPlan& p = plans[s.plan];
    const std::int64_t c = p.needed[s.index], lo = c * p.chunk, hi = p.chunk_end(c);
    const ElementRange* direct = p.direct_range(lo, hi, keep);
    preads.push_back({p.address[s.index], (hi - lo) * static_cast<std::int64_t>(p.element_bytes),
                      direct != nullptr ? p.at(direct->out, lo - direct->begin) : nullptr});
  }
  const std::vector<ChunkResult> results =
      pread_chunks(raw_fd_, path_, checksum_, preads, [&](std::size_t i, const std::byte* data, const ChunkResult& r) {
        const DatasetPlan& p = plans[sources[i].plan];
        const std::int64_t c = p.needed[sources[i].index], lo = c * p.chunk, hi = p.chunk_end(c);
        if (!r.error.empty() || r.sum != p.sums[static_cast<std::size_t>(c)]) return;
        p.copy_out(data, lo, hi, p.direct_range(lo, hi, keep), keep);
      });
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const DatasetPlan& p = plans[sources[i].plan];
    const std::int64_t c = p.needed[sources[i].index];
    if (!results[i].error.empty()) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            "reading chunk " + std::to_string(c) + " of " + p.where + ": " + results[i].error);
    }
    if (results[i].sum != p.sums[static_cast<std::size_t>(c)]) {
      throw mismatch(p.where, checksum_, c, p.chunk, p.length, results[i].sum, p.sums[static_cast<std::size_t>(c)]);
    }
    bytes_read_ += preads[i].bytes;
  }

  // The other datasets through HDF5, in runs of consecutive chunks (decompressed when they are),
  // each run straight into its destination when one kept range holds it, else through buffer_.
  for (const DatasetPlan& p : plans) {
    if (!p.raw) bytes_read_ += read_through_hdf5(file_.get(), path_, checksum_, p, keep, buffer_);
  }
}

}  // namespace tessera
