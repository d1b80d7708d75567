// Flat ranges to hyperslab blocks, and one VDS mapping per (shard piece, block).
#include "tessera/checkpointing/format/virtual_datasets.hpp"

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

void write_one(hid_t group, const std::string& name, const ParamRecord& p, const CheckpointLayout& layout,
               const StateSpec& state, const std::string& where) {
  const std::string& dataset = state.name;
  const Shape dims = dims_of(p.shape);
  std::vector<hsize_t> vdims(dims.begin(), dims.end());
  H5Id vspace(check_id(H5Screate_simple(static_cast<int>(vdims.size()), vdims.data(), nullptr),
                       CheckpointErrorKind::kIo, "H5Screate_simple"),
              H5Sclose);
  const UnitRecord& unit = layout.units.at(static_cast<std::size_t>(p.unit));
  const hsize_t src_dims[1] = {static_cast<hsize_t>(unit.shard_numel)};
  H5Id sspace(check_id(H5Screate_simple(1, src_dims, nullptr), CheckpointErrorKind::kIo, "H5Screate_simple"), H5Sclose);
  H5Id dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), CheckpointErrorKind::kIo, "H5Pcreate"), H5Pclose);
  const std::string source = escape_percent(unit_group_path(unit.name) + "/" + dataset);
  std::int64_t q = 0;  // flat position within the parameter
  for (const ShardPiece& piece : layout.locate(p.unit, p.offset, p.offset + p.numel())) {
    const std::string file = escape_percent(shard_file_name(piece.shard));
    std::int64_t src = piece.begin;
    for (const ArrayBox& box : flat_range_boxes(dims, q, q + piece.count)) {
      std::vector<hsize_t> start(box.start.begin(), box.start.end()), count(box.count.begin(), box.count.end());
      check_status(H5Sselect_hyperslab(vspace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
                   CheckpointErrorKind::kIo, "selecting in the virtual dataset " + name);
      const hsize_t s_start[1] = {static_cast<hsize_t>(src)}, s_count[1] = {static_cast<hsize_t>(box.numel())};
      check_status(H5Sselect_hyperslab(sspace.get(), H5S_SELECT_SET, s_start, nullptr, s_count, nullptr),
                   CheckpointErrorKind::kIo, "selecting the source of " + name);
      check_status(H5Pset_virtual(dcpl.get(), vspace.get(), file.c_str(), source.c_str(), sspace.get()),
                   CheckpointErrorKind::kIo, "mapping the virtual dataset " + name);
      src += box.numel();
    }
    q += piece.count;
  }
  const H5Id type = detail::state_hdf5_type(state.dtype);
  H5Id dset(check_id(H5Dcreate2(group, name.c_str(), type.get(), vspace.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                     CheckpointErrorKind::kIo, "creating the virtual dataset " + where + ":" + name),
            H5Dclose);
  detail::write_attribute(dset.get(), "unit", unit.name);
  detail::write_attribute(dset.get(), "offset", p.offset);
}

}  // namespace

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
    for (const ParamRecord& p : layout.params) write_one(group.get(), p.name, p, layout, state, where);
  }
}

}  // namespace tessera
