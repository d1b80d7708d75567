// Export from shard files to one HDF5 or safetensors file (see checkpoint_export.hpp).
#include "tessera/checkpointing/export/checkpoint_export.hpp"

#include <stdexcept>

#include "tessera/checkpointing/export/checkpoint_parameters.hpp"
#include "tessera/checkpointing/export/export_tokenizer.hpp"
#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/export/hf_model_config.hpp"
#include "tessera/checkpointing/export/hf_tensor_names.hpp"
#include "tessera/checkpointing/export/safetensors_file.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/checkpointing/save/disk_space.hpp"
#include "tessera/core/parse_number.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/precision/float_bits.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

using detail::check_id;
using detail::check_status;
using detail::H5Id;

void write_parameter(hid_t group, const ParamRecord& p, const std::vector<float>& values, DType dtype,
                     const std::string& where) {
  std::vector<hsize_t> dims(p.shape.begin(), p.shape.end());
  if (dims.empty()) dims.push_back(1);
  H5Id space(check_id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), CheckpointErrorKind::kIo,
                      "H5Screate_simple"),
             H5Sclose);
  H5Id bf16;
  hid_t type = H5T_IEEE_F32LE;
  if (dtype == DType::kBF16) {
    bf16 = detail::bf16_file_type();
    type = bf16.get();
  }
  H5Id dset(check_id(H5Dcreate2(group, p.name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     CheckpointErrorKind::kIo, "creating " + where + ":/model/" + p.name),
            H5Dclose);
  if (dtype == DType::kBF16) {
    std::vector<std::uint16_t> bits(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) bits[i] = f32_to_bf16(values[i]);
    check_status(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, bits.data()), CheckpointErrorKind::kIo,
                 "writing " + where + ":/model/" + p.name);
  } else {
    check_status(H5Dwrite(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                 CheckpointErrorKind::kIo, "writing " + where + ":/model/" + p.name);
  }
  detail::write_attribute(dset.get(), "dtype", std::string(dtype_name(dtype)));
}

// The token-embedding rows the Hugging Face formats keep: the option, else the tokenizer's recorded
// vocabulary, else every row.
std::int64_t exported_vocab(const CheckpointMeta& meta, std::int64_t requested) {
  const std::int64_t padded = parse_integer(meta.config.model().at("vocab_size"), "meta.h5 model field vocab_size", 1);
  std::int64_t vocab = requested;
  if (vocab == 0) {
    const auto it = meta.config.run().find("tokenizer_vocab");
    vocab = it != meta.config.run().end() ? parse_integer(it->second, "meta.h5 run field tokenizer_vocab") : padded;
  }
  if (vocab < 1 || vocab > padded) {
    throw SettingError("export.vocab_size", std::to_string(vocab),
                       "must be between 1 and the model's padded vocabulary " + std::to_string(padded));
  }
  return vocab;
}

// The Hugging Face tensors `p` is stored as, or a CheckpointError for a parameter outside the
// architecture's Hugging Face layout.
std::vector<HfTensorName> require_hf_names(const CheckpointMeta& meta, const ParamRecord& p, const fs::path& dir) {
  const GptArchitecture architecture = gpt_architecture_of(meta.config, dir.string());
  std::vector<HfTensorName> hf = hf_tensor_names(architecture, p.name, p.shape);
  if (hf.empty()) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                          dir.string() + " holds parameter '" + p.name + "', which has no Hugging Face " +
                              gpt_architecture_name(architecture) + " name; export it with the hdf5 format");
  }
  return hf;
}

ExportSummary export_safetensors(CheckpointParameters& params, const fs::path& out, const ExportOptions& options) {
  const CheckpointMeta& meta = params.meta();
  const std::int64_t vocab = exported_vocab(meta, options.vocab_size);
  std::vector<SafetensorsTensor> tensors;
  for (const ParamRecord& p : params.in_order()) {
    for (const HfTensorName& hf : require_hf_names(meta, p, params.dir())) {
      tensors.push_back({hf.name, options.dtype, hf_shape(hf, p.shape, vocab)});
    }
  }
  std::map<std::string, std::string> metadata{{"format", "pt"},
                                              {"tessera_step", std::to_string(meta.progress.step)},
                                              {"tessera_source", params.dir().string()}};
  for (const auto& [key, value] : meta.config.model()) metadata["tessera_model." + key] = value;
  SafetensorsWriter writer(out, tensors, metadata);
  ExportSummary summary;
  summary.step = meta.progress.step;
  summary.vocab_size = vocab;
  params.for_each([&](const ParamRecord& p, const std::vector<float>& values) {
    for (const HfTensorName& hf : require_hf_names(meta, p, params.dir())) {
      const std::vector<float> stored = to_hf_layout(hf, p.shape, values, vocab);
      writer.write_next(stored);
      ++summary.parameters;
      summary.elements += static_cast<std::int64_t>(stored.size());
    }
  });
  summary.bytes = writer.finish();
  summary.config_json = out.parent_path() / "config.json";
  summary.model_file = out;
  write_hf_config(summary.config_json, meta.config, vocab, options.dtype, meta.progress.step);
  return summary;
}

ExportSummary export_hdf5(CheckpointParameters& params, const fs::path& out, const ExportOptions& options) {
  const CheckpointMeta& meta = params.meta();
  const bool hf_names = uses_hf_names(options.format);
  const std::int64_t vocab = hf_names ? exported_vocab(meta, options.vocab_size) : 0;
  const fs::path tmp = out.string() + ".tmp";
  ExportSummary summary;
  summary.step = meta.progress.step;
  summary.vocab_size =
      hf_names ? vocab : parse_integer(meta.config.model().at("vocab_size"), "meta.h5 model field vocab_size", 1);
  {
    detail::Hdf5Guard guard;
    H5Id file = detail::create_file(tmp.string());
    detail::write_attribute(file.get(), "tessera_checkpoint_format", kPlainFormat);
    detail::write_attribute(file.get(), "kind", std::string("export"));
    detail::write_attribute(file.get(), "names", std::string(hf_names ? kHfGpt2Names : kTesseraNames));
    detail::write_attribute(file.get(), "step", meta.progress.step);
    detail::write_attribute(file.get(), "dtype", std::string(dtype_name(options.dtype)));
    detail::write_attribute(file.get(), "source", params.dir().string());
    {
      H5Id config = detail::create_group(file.get(), "config", tmp.string());
      for (const char* section : {"model", "run"}) {
        H5Id group = detail::create_group(config.get(), section, tmp.string());
        const auto& fields = std::string(section) == "model" ? meta.config.model() : meta.config.run();
        for (const auto& [key, value] : fields) detail::write_attribute(group.get(), key, value);
      }
      if (hf_names) {
        H5Id group = detail::open_group(config.get(), "model", tmp.string());
        detail::write_attribute(group.get(), "exported_vocab_size", std::to_string(vocab));
      }
    }
    H5Id model = detail::create_group(file.get(), "model", tmp.string());
    params.for_each([&](const ParamRecord& p, const std::vector<float>& values) {
      if (!hf_names) {
        write_parameter(model.get(), p, values, options.dtype, tmp.string());
        summary.elements += p.numel();
      } else {
        for (const HfTensorName& hf : require_hf_names(meta, p, params.dir())) {
          ParamRecord stored = p;
          stored.name = hf.name;
          stored.shape = hf_shape(hf, p.shape, vocab);
          write_parameter(model.get(), stored, to_hf_layout(hf, p.shape, values, vocab), options.dtype, tmp.string());
          summary.elements += stored.numel();
          ++summary.parameters;
        }
        return;
      }
      ++summary.parameters;
    });
    model.reset();
    check_status(file.close(), CheckpointErrorKind::kIo, "closing " + tmp.string());
  }
  fsync_path(tmp);
  durable_rename(tmp, out);
  summary.bytes = static_cast<std::int64_t>(fs::file_size(out));
  summary.model_file = out;
  return summary;
}

// A Hugging Face model directory: out/model.safetensors with its config.json, and the tokenizer files.
ExportSummary export_model_directory(const fs::path& checkpoint, const fs::path& out, const ExportOptions& options) {
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) {
    throw SettingError("export.out", out.string(),
                       "is a file; a model directory export needs a directory (or a name ending in .safetensors)");
  }
  fs::create_directories(out, ec);
  if (ec) {
    throw CheckpointError(CheckpointErrorKind::kIo, "cannot make the model directory " + out.string() + ": " +
                                                        ec.message() + "; choose a writable path");
  }
  ExportSummary summary = export_checkpoint(checkpoint, out / "model.safetensors", options);
  try {
    summary.tokenizer = write_export_tokenizer(CheckpointParameters(checkpoint).meta().config, out);
  } catch (const std::exception& e) {
    throw CheckpointError(CheckpointErrorKind::kIo,
                          std::string("the tokenizer files of ") + out.string() + ": " + e.what());
  }
  return summary;
}

}  // namespace

ExportSummary export_checkpoint(const fs::path& checkpoint, const fs::path& out, DType dtype) {
  ExportOptions options;
  options.dtype = dtype;
  return export_checkpoint(checkpoint, out, options);
}

ExportSummary export_checkpoint(const fs::path& checkpoint, const fs::path& out, const ExportOptions& options) {
  if (options.dtype != DType::kF32 && options.dtype != DType::kBF16) {
    throw SettingError("export.dtype", dtype_name(options.dtype), "cannot be exported; use f32 or bf16");
  }
  check_export_extension(options.format, out);
  if (options.format == ExportFormat::kSafetensors && out.extension().empty()) {
    return export_model_directory(checkpoint, out, options);
  }
  CheckpointParameters params(checkpoint);
  const std::int64_t bytes_needed =
      params.meta().layout.parameter_count() * static_cast<std::int64_t>(dtype_size(options.dtype)) + 65536;
  const fs::path tmp = out.string() + ".tmp";  // both writers write here and rename when whole
  try {
    return options.format == ExportFormat::kSafetensors ? export_safetensors(params, out, options)
                                                        : export_hdf5(params, out, options);
  } catch (const CheckpointError& e) {
    std::error_code ec;
    fs::remove(tmp, ec);  // a failed export leaves nothing behind
    throw explain_write_failure(e, tmp, bytes_needed);
  }
}

}  // namespace tessera
