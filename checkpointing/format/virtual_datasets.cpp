// Flat ranges to hyperslab blocks, and one VDS mapping per (shard piece, block).
#include "tessera/checkpointing/format/virtual_datasets.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/checkpointing/format/state_file_types.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"

namespace tessera {
namespace {

using detail::check_id;
using detail::check_status;
using detail::H5Id;

Shape dims_of(const Shape& shape) { return shape.empty() ? Shape{1} : shape; }

void collect_boxes(const Shape& shape, std::size_t dim, std::vector<std::int64_t>& prefix, std::int64_t a,
                   std::int64_t b, std::vector<ArrayBox>& out) {
  if (a >= b) return;
  const std::size_t ndim = shape.size();
  auto box = [&](std::int64_t first, std::int64_t rows) {
    ArrayBox bx;
    bx.start = prefix;
    bx.count.assign(prefix.size(), 1);
    bx.start.push_back(first);
    bx.count.push_back(rows);
    for (std::size_t d = dim + 1; d < ndim; ++d) {
      bx.start.push_back(0);
      bx.count.push_back(shape[d]);
    }
    out.push_back(std::move(bx));
  };
  if (dim + 1 == ndim) {
    box(a, b - a);
    return;
  }
  std::int64_t inner = 1;
  for (std::size_t d = dim + 1; d < ndim; ++d) inner *= shape[d];
  std::int64_t r0 = a / inner;
  const std::int64_t r1 = b / inner;
  if (r0 == r1) {  // within one row of this dimension
    prefix.push_back(r0);
    collect_boxes(shape, dim + 1, prefix, a - r0 * inner, b - r0 * inner, out);
    prefix.pop_back();
    return;
  }
  if (a % inner != 0) {
    prefix.push_back(r0);
    collect_boxes(shape, dim + 1, prefix, a % inner, inner, out);
    prefix.pop_back();
    ++r0;
  }
  if (r1 > r0) box(r0, r1 - r0);
  if (b % inner != 0) {
    prefix.push_back(r1);
    collect_boxes(shape, dim + 1, prefix, 0, b % inner, out);
    prefix.pop_back();
  }
}

std::string escape_percent(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

// The virtual dataset of one parameter over its records: the whole tensor from the pieces of a
// split parameter (each local run mapped to its place in the whole tensor), or the one record.
void write_one(hid_t group, const std::string& name, const std::vector<const ParamRecord*>& records,
               const CheckpointLayout& layout, const StateSpec& state, const std::string& where) {
  const std::string& dataset = state.name;
  const ParamRecord& first = *records.front();
  const Shape dims = dims_of(first.full_shape());
  std::vector<hsize_t> vdims(dims.begin(), dims.end());
  H5Id vspace(check_id(H5Screate_simple(static_cast<int>(vdims.size()), vdims.data(), nullptr),
                       CheckpointErrorKind::kIo, "H5Screate_simple"),
              H5Sclose);
  H5Id dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), CheckpointErrorKind::kIo, "H5Pcreate"), H5Pclose);
  for (const ParamRecord* p : records) {
    const UnitRecord& unit = layout.units.at(static_cast<std::size_t>(p->unit));
    const hsize_t src_dims[1] = {static_cast<hsize_t>(unit.shard_numel)};
    H5Id sspace(check_id(H5Screate_simple(1, src_dims, nullptr), CheckpointErrorKind::kIo, "H5Screate_simple"),
                H5Sclose);
    const std::string source = escape_percent(unit_group_path(unit.name) + "/" + dataset);
    std::int64_t q = 0;  // flat position within the record
    for (const ShardPiece& piece : layout.locate(p->unit, p->offset, p->offset + p->numel())) {
      const std::string file = escape_percent(shard_file_name(piece.shard));
      // Each run of the piece's elements that is consecutive in the whole tensor, as boxes.
      for_each_global_run(
          p->shape, p->slice, q, piece.count, [&](std::int64_t global, std::int64_t local, std::int64_t count) {
            std::int64_t src = piece.begin + (local - q);
            for (const ArrayBox& box : flat_range_boxes(dims, global, global + count)) {
              std::vector<hsize_t> start(box.start.begin(), box.start.end()),
                  box_count(box.count.begin(), box.count.end());
              check_status(
                  H5Sselect_hyperslab(vspace.get(), H5S_SELECT_SET, start.data(), nullptr, box_count.data(), nullptr),
                  CheckpointErrorKind::kIo, "selecting in the virtual dataset " + name);
              const hsize_t s_start[1] = {static_cast<hsize_t>(src)}, s_count[1] = {static_cast<hsize_t>(box.numel())};
              check_status(H5Sselect_hyperslab(sspace.get(), H5S_SELECT_SET, s_start, nullptr, s_count, nullptr),
                           CheckpointErrorKind::kIo, "selecting the source of " + name);
              check_status(H5Pset_virtual(dcpl.get(), vspace.get(), file.c_str(), source.c_str(), sspace.get()),
                           CheckpointErrorKind::kIo, "mapping the virtual dataset " + name);
              src += box.numel();
            }
          });
      q += piece.count;
    }
  }
  const H5Id type = detail::state_hdf5_type(state.dtype);
  H5Id dset(check_id(H5Dcreate2(group, name.c_str(), type.get(), vspace.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                     CheckpointErrorKind::kIo, "creating the virtual dataset " + where + ":" + name),
            H5Dclose);
  const UnitRecord& unit = layout.units.at(static_cast<std::size_t>(first.unit));
  detail::write_attribute(dset.get(), "unit", unit.name);
  detail::write_attribute(dset.get(), "offset", first.offset);
}

// A VDS source name as written (with printf-style "%%" for "%"); nullopt for a pattern ("%b").
std::optional<std::string> unescape_percent(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
    } else if (i + 1 < s.size() && s[i + 1] == '%') {
      out += '%';
      ++i;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// An HDF5 name of the property list: the two-call size-then-text form of H5Pget_virtual_*name.
template <typename Get>
std::string virtual_name(Get get, hid_t dcpl, std::size_t i, const std::string& where) {
  const ssize_t n = get(dcpl, i, nullptr, 0);
  if (n < 0) throw CheckpointError(CheckpointErrorKind::kCorruptData, where + ": a virtual mapping has no source name");
  std::string name(static_cast<std::size_t>(n) + 1, '\0');
  get(dcpl, i, name.data(), name.size());
  name.resize(static_cast<std::size_t>(n));
  return name;
}

// Every group on `path` and the last link exist in `file` (H5Lexists needs the parents to exist).
bool path_exists(hid_t file, const std::string& path) {
  std::string prefix;
  for (std::size_t at = 0; at <= path.size();) {
    std::size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    if (slash > at) {
      prefix += '/';
      prefix.append(path, at, slash - at);
      if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    }
    at = slash + 1;
  }
  return !prefix.empty();
}

std::string file_name_of(hid_t object) {
  const ssize_t n = H5Fget_name(object, nullptr, 0);
  if (n <= 0) return "";
  std::string name(static_cast<std::size_t>(n) + 1, '\0');
  H5Fget_name(object, name.data(), name.size());
  name.resize(static_cast<std::size_t>(n));
  return name;
}

}  // namespace

void check_virtual_sources(hid_t dataset, const std::string& where) {
  H5Id dcpl(check_id(H5Dget_create_plist(dataset), CheckpointErrorKind::kCorruptData, "reading the layout of " + where),
            H5Pclose);
  if (H5Pget_layout(dcpl.get()) != H5D_VIRTUAL) return;
  std::size_t count = 0;
  check_status(H5Pget_virtual_count(dcpl.get(), &count), CheckpointErrorKind::kCorruptData,
               "reading the virtual mappings of " + where);
  const std::filesystem::path own = file_name_of(dataset);
  std::map<std::string, H5Id> opened;  // source file -> open handle, each opened once
  for (std::size_t i = 0; i < count; ++i) {
    const std::string raw_file = virtual_name(H5Pget_virtual_filename, dcpl.get(), i, where);
    const std::string raw_dset = virtual_name(H5Pget_virtual_dsetname, dcpl.get(), i, where);
    const auto file = unescape_percent(raw_file);
    const auto dset = unescape_percent(raw_dset);
    if (!file || !dset) {
      throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                            where + " is a virtual dataset with a source pattern ('" + raw_file + "', '" + raw_dset +
                                "'), which Tessera does not read");
    }
    hid_t source = H5I_INVALID_HID;
    if (*file == ".") {
      source = dataset;  // the dataset's own file
    } else {
      const std::filesystem::path named(*file);
      const std::string path = (named.is_absolute() ? named : own.parent_path() / named).string();
      auto it = opened.find(path);
      if (it == opened.end()) {
        std::error_code ec;
        const hid_t id = std::filesystem::is_regular_file(path, ec) ? H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)
                                                                    : H5I_INVALID_HID;
        if (id < 0) {
          throw CheckpointError(CheckpointErrorKind::kMissingFile,
                                where + " is a virtual dataset whose source file " + path +
                                    " is missing or unreadable; HDF5 would read its values as zeros. Restore the "
                                    "file, or read a checkpoint or export that holds the data itself");
        }
        it = opened.emplace(path, H5Id(id, H5Fclose)).first;
      }
      source = it->second.get();
    }
    if (!path_exists(source, *dset)) {
      throw CheckpointError(CheckpointErrorKind::kMissingFile,
                            where + " is a virtual dataset whose source " + *file + ":" + *dset +
                                " does not exist; HDF5 would read its values as zeros");
    }
  }
}

std::int64_t ArrayBox::numel() const {
  std::int64_t n = 1;
  for (std::int64_t c : count) n *= c;
  return n;
}

std::vector<ArrayBox> flat_range_boxes(const Shape& shape, std::int64_t begin, std::int64_t end) {
  std::vector<ArrayBox> out;
  std::vector<std::int64_t> prefix;
  collect_boxes(dims_of(shape), 0, prefix, begin, end, out);
  return out;
}

void write_virtual_datasets(hid_t file, const CheckpointLayout& layout, const std::string& where) {
  H5Id optimizer = detail::create_group(file, "optimizer", where);
  for (const StateSpec& state : layout.states) {
    if (state.elements_per_value != 1) continue;  // per-block values have no parameter shape
    H5Id group = state.name == kMasterDataset ? detail::create_group(file, "model", where)
                                              : detail::create_group(optimizer.get(), state.name, where);
    std::set<std::string> written;
    for (const ParamRecord& p : layout.params) {
      if (written.insert(p.name).second) write_one(group.get(), p.name, layout.pieces_of(p.name), layout, state, where);
    }
  }
}

}  // namespace tessera
