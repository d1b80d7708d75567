// Export and import of full model weights, one plain HDF5 file for inference or other tools:
//
//   out.h5  /                 attributes tessera_checkpoint_format, kind = "export", step, dtype
//           /model/<param>    the full parameter in its shape, f32 or bf16 (a 2-byte HDF5 float type
//                             with bf16's layout: HDF5 converts it to f32 on read)
//           /config/model, /config/run   the run's config, as in meta.h5
//
// Export runs in one process and reads the shard files directly (checksums verified), one
// parameter at a time. Import (--init-from, fine-tuning) sets a fresh engine's parameters from such
// a file: each rank reads the hyperslabs of its optimizer range only.
#pragma once

#include <cstdint>
#include <filesystem>

#include "checkpointing/run_config.hpp"
#include "comm/communicator.hpp"
#include "precision/dtype.hpp"

namespace tessera {

class ShardedEngine;

struct ExportSummary {
  std::int64_t step = 0;
  std::int64_t parameters = 0;  // tensors written
  std::int64_t elements = 0;    // values written
  std::int64_t bytes = 0;       // size of the output file
};

// `checkpoint`: a checkpoint directory or a run directory (its latest). dtype: kF32 or kBF16.
// Writes `out` through out.tmp + rename. Throws CheckpointError (std::invalid_argument for a dtype).
ExportSummary export_checkpoint(const std::filesystem::path& checkpoint, const std::filesystem::path& out, DType dtype);

// Collective over `world`: every parameter of `engine` from `file` (names and shapes must match:
// kConfigMismatch naming the parameter), Adam moments zero, step count 0; then publishes. When
// `expected` has model fields, they must match the file's. Validated and agreed before any change.
void load_exported_weights(ShardedEngine& engine, Communicator& world, const std::filesystem::path& file,
                           const RunConfig& expected = {});

}  // namespace tessera
