// The HDF5 type a state tensor of each DType is stored as, used both to create its datasets and
// to read and write its elements (bytes in memory exactly as on disk, no conversion): f32, i32, i8
// and u8 little-endian, bf16 as a 2-byte float with bf16's layout, f16 as IEEE half. HDF5 converts the
// float types to f32 when a reader asks for f32 (h5py, the export).
#pragma once

#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera::detail {

H5Id state_hdf5_type(DType dtype);

}  // namespace tessera::detail
