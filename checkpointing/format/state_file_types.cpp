// HDF5 types of state tensors by DType.
#include "tessera/checkpointing/format/state_file_types.hpp"

namespace tessera::detail {

H5Id state_hdf5_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return H5Id(check_id(H5Tcopy(H5T_IEEE_F32LE), CheckpointErrorKind::kIo, "H5Tcopy"), H5Tclose);
    case DType::kBF16: return bf16_file_type();
    case DType::kF16: return f16_file_type();
    case DType::kI32: return H5Id(check_id(H5Tcopy(H5T_STD_I32LE), CheckpointErrorKind::kIo, "H5Tcopy"), H5Tclose);
    case DType::kI8: return H5Id(check_id(H5Tcopy(H5T_STD_I8LE), CheckpointErrorKind::kIo, "H5Tcopy"), H5Tclose);
    case DType::kU8: return H5Id(check_id(H5Tcopy(H5T_STD_U8LE), CheckpointErrorKind::kIo, "H5Tcopy"), H5Tclose);
  }
  throw CheckpointError(CheckpointErrorKind::kIo, "no HDF5 type for this dtype");
}

}  // namespace tessera::detail
