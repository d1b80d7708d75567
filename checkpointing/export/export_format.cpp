// Export formats: names and the extensions each requires.
#include "tessera/checkpointing/export/export_format.hpp"

#include "tessera/core/setting_error.hpp"

namespace tessera {

ExportFormat parse_export_format(std::string_view name) {
  if (name == "hdf5") return ExportFormat::kHdf5;
  if (name == "safetensors") return ExportFormat::kSafetensors;
  if (name == "torch-names") return ExportFormat::kTorchNames;
  throw SettingError("export.format", std::string(name), "is not a format; use hdf5, safetensors or torch-names");
}

const char* export_format_name(ExportFormat format) {
  switch (format) {
    case ExportFormat::kHdf5: return "hdf5";
    case ExportFormat::kSafetensors: return "safetensors";
    case ExportFormat::kTorchNames: return "torch-names";
  }
  return "?";
}

void check_export_extension(ExportFormat format, const std::filesystem::path& out) {
  const std::string ext = out.extension().string();
  if (format == ExportFormat::kSafetensors) {
    if (ext == ".safetensors" || ext.empty()) return;
    throw SettingError("export.out", out.string(),
                       "does not end in .safetensors, the extension of the safetensors format; name the file "
                       "model.safetensors, give a directory without an extension (a Hugging Face model "
                       "directory), or choose the hdf5 or torch-names format for an .h5 file");
  }
  if (ext == ".h5" || ext == ".hdf5") return;
  throw SettingError("export.out", out.string(),
                     std::string("does not end in .h5 or .hdf5, the extensions of the ") + export_format_name(format) +
                         " format (an HDF5 file); name it model.h5, or choose the safetensors format for a "
                         ".safetensors file");
}

}  // namespace tessera
