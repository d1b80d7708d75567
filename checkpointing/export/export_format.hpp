// What `tessera_ckpt export` writes, and the file extension each format requires:
//   hdf5         Tessera's names and layouts in one HDF5 file (.h5 or .hdf5)
//   safetensors  Hugging Face GPT-2 names and layouts in a .safetensors file, config.json beside it
//   torch-names  Hugging Face GPT-2 names and layouts in an HDF5 file (.h5 or .hdf5)
// A file name whose extension does not match its format is refused, so a .safetensors name never
// silently holds HDF5.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "tessera/precision/dtype.hpp"

namespace tessera {

enum class ExportFormat { kHdf5, kSafetensors, kTorchNames };

// "hdf5" | "safetensors" | "torch-names"; anything else: SettingError("export.format").
ExportFormat parse_export_format(std::string_view name);
const char* export_format_name(ExportFormat format);

// SettingError("export.out") when `out`'s extension is not the format's, saying which to use.
void check_export_extension(ExportFormat format, const std::filesystem::path& out);

// True when the format uses Hugging Face GPT-2 names and layouts.
inline bool uses_hf_names(ExportFormat format) { return format != ExportFormat::kHdf5; }

struct ExportOptions {
  ExportFormat format = ExportFormat::kHdf5;
  DType dtype = DType::kF32;  // kF32 or kBF16
  // Rows of the token embedding written by the Hugging Face formats (the tokenizer's vocabulary,
  // without the padding rows); 0: the checkpoint's recorded tokenizer_vocab, else its vocab_size.
  std::int64_t vocab_size = 0;
};

}  // namespace tessera
