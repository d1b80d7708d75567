// Virtual datasets that show each full parameter (and its optimizer state) by name inside meta.h5,
// stitched from the shard files by HDF5 itself: /model/<name> from the master weights, and
// /optimizer/<state>/<name> for every other element-wise state tensor of the layout (AdamW:
// exp_avg, exp_avg_sq; 8-bit AdamW: the codes, not the per-block scales), in the parameter's
// shape and the state's dtype. Source files are named relative
// ("shard_00003.h5"), which HDF5 resolves against meta.h5's own directory, so a checkpoint
// directory can be renamed or copied and h5dump / h5py still read the full tensors.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_layout.hpp"

namespace tessera {

// A rectangular block of an N-D array: start and count per dimension.
struct ArrayBox {
  std::vector<std::int64_t> start;
  std::vector<std::int64_t> count;
  std::int64_t numel() const;
};

// The row-major flat range [begin, end) of an array of `shape` as blocks, in order (at most
// 2 * ndim - 1 of them). A 0-d shape counts as (1).
std::vector<ArrayBox> flat_range_boxes(const Shape& shape, std::int64_t begin, std::int64_t end);

// Adds the virtual datasets of every parameter in `layout` to the open file `file`.
void write_virtual_datasets(hid_t file, const CheckpointLayout& layout, const std::string& where);

// When `dataset` is virtual: every source file it maps (resolved as HDF5 does, against the directory
// of the dataset's own file) opens, and holds the source dataset. HDF5 itself reads a missing source
// as the fill value (zeros) without an error; this refuses it first with a CheckpointError
// (kMissingFile) naming `where`, the source file and the source dataset. No-op for other layouts.
void check_virtual_sources(hid_t dataset, const std::string& where);

}  // namespace tessera
