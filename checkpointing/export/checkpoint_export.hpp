// Export and import of full model weights, for inference, other tools and fine-tuning. Three formats
// (checkpointing/export/export_format.hpp):
//
//   hdf5         out.h5  /                 attributes tessera_checkpoint_format, kind = "export",
//                                          names = "tessera", step, dtype
//                        /model/<param>    the full parameter in its shape, f32 or bf16 (a 2-byte HDF5
//                                          float type with bf16's layout: HDF5 converts it to f32 on read)
//                        /config/model, /config/run   the run's config, as in meta.h5
//   torch-names  out.h5  the same, names = "hf-gpt2": /model/<Hugging Face name> in Hugging Face's
//                        layout (checkpointing/export/hf_tensor_names.hpp), the vocabulary unpadded, and
//                        /config/model gains exported_vocab_size
//   safetensors  out.safetensors + config.json beside it: Hugging Face GPT-2 or Llama names and
//                layouts (checkpointing/export/safetensors_file.hpp, checkpointing/export/hf_model_config.hpp);
//                or, for an OUT without an extension, a Hugging Face model directory: OUT/model.safetensors,
//                OUT/config.json and the tokenizer files (checkpointing/export/export_tokenizer.hpp),
//                which from_pretrained / AutoTokenizer.from_pretrained and Tessera's programs load
//
// Export runs in one process and reads the shard files directly (checksums verified), one unit at
// a time. Import (--init-from, fine-tuning, tessera_eval) sets a fresh engine's parameters from any
// of the three: each rank reads what its optimizer range needs.
#pragma once

#include <cstdint>
#include <filesystem>

#include "tessera/checkpointing/export/export_format.hpp"
#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/comm/communicator.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera {

class ShardedEngine;

// The HDF5 export's "names" attribute: Tessera's names and layouts, or Hugging Face GPT-2's.
inline constexpr const char* kTesseraNames = "tessera";
inline constexpr const char* kHfGpt2Names = "hf-gpt2";

struct ExportSummary {
  std::int64_t step = 0;
  std::int64_t parameters = 0;        // tensors written
  std::int64_t elements = 0;          // values written
  std::int64_t bytes = 0;             // size of the output file
  std::int64_t vocab_size = 0;        // token-embedding rows written
  std::filesystem::path config_json;  // safetensors: the config.json written beside it
  std::filesystem::path model_file;   // the weights file written (OUT, or OUT/model.safetensors)
  std::string tokenizer;              // a model directory: its tokenizer files, in words
};

// `checkpoint`: a checkpoint directory or a run directory (its latest). options.dtype: kF32 or
// kBF16. `out` must have the format's extension, or none for a safetensors model directory
// (SettingError "export.out" otherwise). Writes
// through out.tmp + rename. Throws CheckpointError (std::invalid_argument / SettingError for options).
ExportSummary export_checkpoint(const std::filesystem::path& checkpoint, const std::filesystem::path& out,
                                const ExportOptions& options);
// The hdf5 format in `dtype`.
ExportSummary export_checkpoint(const std::filesystem::path& checkpoint, const std::filesystem::path& out, DType dtype);

// The model fields stored with an export (any format): vocab_size (rows in the file), max_seq_len,
// layers, heads, channels. A .safetensors file is read with the config.json beside it.
RunConfig read_export_model_config(const std::filesystem::path& file);

// Collective over `world`: every parameter of `engine` from `file`, an export of any format (told
// apart by the extension .safetensors and the HDF5 "names" attribute); names and shapes must match
// (kConfigMismatch naming the parameter). A Hugging Face file's token embedding may have fewer rows
// than the model's padded vocabulary: the rows it lacks are zero. Adam moments zero, step count 0;
// then publishes. When `expected` has model fields, they must match the file's (the vocabulary may
// be smaller in a Hugging Face file). Validated and agreed before any change.
void load_exported_weights(ShardedEngine& engine, Communicator& world, const std::filesystem::path& file,
                           const RunConfig& expected = {});

}  // namespace tessera
