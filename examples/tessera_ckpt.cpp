// tessera_ckpt: looks at and converts sharded checkpoints without training.
//
//   tessera_ckpt info DIR                          step, config, world size, sizes
//   tessera_ckpt verify DIR                        checks meta.h5's digests and layout, every shard
//                                                  file's save id and step, and every checksum
//   tessera_ckpt export DIR OUT [--format hdf5|safetensors|torch-names] [--dtype f32|bf16] [--vocab N]
//   (safetensors with an OUT without extension: a Hugging Face model directory, tokenizer files included)
//       hdf5 (OUT.h5): Tessera's names; safetensors (OUT.safetensors, config.json beside it) and
//       torch-names (OUT.h5): Hugging Face GPT-2 names and layouts, the vocabulary unpadded
//
// DIR is a checkpoint directory (DIR/step_0000500) or a run directory (its `latest`). Exit status:
// 0 on success, 1 when the checkpoint is missing, truncated, corrupted or of an unknown format (the
// message names the file and dataset), 2 on a usage error.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "flags/program_options.hpp"
#include "tessera/checkpointing/export/checkpoint_export.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_info.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/health_mark.hpp"
#include "tessera/checkpointing/format/meta_digests.hpp"
#include "tessera/core/nearest_name.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/precision/dtype.hpp"
#include "tessera/runtime/memory_tracker.hpp"

namespace {

namespace po = boost::program_options;

constexpr const char* kUsage =
    "usage: tessera_ckpt info DIR\n"
    "       tessera_ckpt verify DIR\n"
    "       tessera_ckpt export DIR OUT [--format hdf5|safetensors|torch-names] [--dtype f32|bf16] [--vocab N]\n"
    "DIR: a checkpoint directory (step_NNNNNNN) or a run directory (uses its latest checkpoint)\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "tessera_ckpt: %s\n%s", message.c_str(), kUsage);
  return 2;
}

int run(int argc, char** argv) {
  std::vector<std::string> args;
  std::string format = "hdf5", dtype = "f32";
  std::int64_t vocab = 0;
  po::options_description options("Export options");
  // clang-format off
  options.add_options()
      ("format", tessera::value_with_default(&format),
       "export: hdf5 (Tessera's names, .h5), safetensors (Hugging Face GPT-2 or Llama names and layouts, .safetensors, "
       "config.json beside it; an OUT without extension: a Hugging Face model directory with the tokenizer files) or torch-names (Hugging Face names and layouts in HDF5, .h5)")
      ("dtype", tessera::value_with_default(&dtype), "export: f32 or bf16")
      ("vocab", tessera::value_with_default(&vocab),
       "export, Hugging Face names: token-embedding rows to keep (0: the tokenizer's vocabulary recorded by "
       "train_gpt, else every row)");
  // clang-format on
  po::options_description hidden;
  hidden.add_options()("args", po::value(&args)->multitoken(), "command and its arguments");
  po::positional_options_description positional;
  positional.add("args", -1);
  tessera::ProgramOptions program(
      "tessera_ckpt", std::string("tessera_ckpt: look at, check and export sharded checkpoints\n") + kUsage);
  program.add(options);
  program.add_hidden(hidden);
  program.set_positional(positional);
  try {
    if (!program.parse(argc, argv)) return 0;
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  }
  if (args.empty()) return usage_error("no command");
  const std::string& command = args[0];
  const std::vector<std::string> commands{"info", "verify", "export"};
  if (std::find(commands.begin(), commands.end(), command) == commands.end()) {
    const std::string near = tessera::nearest_name(commands, command);
    return usage_error("unknown command '" + command + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
                       " The commands are info, verify and export");
  }
  const bool export_options = program.given("format") || program.given("dtype") || program.given("vocab");
  if (command != "export" && export_options) return usage_error("--format, --dtype and --vocab are options of export");
  if (command == "info" && args.size() == 2) {
    std::printf("%s", tessera::describe_checkpoint(args[1]).c_str());
    return 0;
  }
  if (command == "verify" && args.size() == 2) {
    const tessera::VerifySummary v = tessera::verify_checkpoint(args[1]);
    std::printf(
        "%s: step %lld, save id %s: meta.h5 and its layout are intact, %d shard file(s) belong to this save, "
        "every checksum matches (%s of state read)\n",
        v.dir.c_str(), static_cast<long long>(v.step), tessera::detail::hex64(v.save_id).c_str(), v.shard_files,
        tessera::format_bytes(v.bytes).c_str());
    return 0;
  }
  if (command == "export" && args.size() == 3) {
    tessera::ExportOptions o;
    o.format = tessera::parse_export_format(format);
    o.dtype = tessera::parse_dtype(dtype, "--dtype");
    o.vocab_size = vocab;
    if (const auto dir = tessera::resolve_checkpoint(args[1])) {
      if (const auto notice = tessera::unhealthy_checkpoint_notice(*dir)) {
        std::fprintf(stderr, "tessera_ckpt: warning: %s\n", notice->c_str());
      }
    }
    const tessera::ExportSummary s = tessera::export_checkpoint(args[1], args[2], o);
    std::printf("exported step %lld: %lld tensors, %lld values as %s %s to %s (%s)\n", static_cast<long long>(s.step),
                static_cast<long long>(s.parameters), static_cast<long long>(s.elements), tessera::dtype_name(o.dtype),
                tessera::export_format_name(o.format), s.model_file.c_str(), tessera::format_bytes(s.bytes).c_str());
    if (!s.config_json.empty())
      std::printf("wrote %s (vocabulary %lld)\n", s.config_json.c_str(), static_cast<long long>(s.vocab_size));
    if (!s.tokenizer.empty()) std::printf("tokenizer: %s\n", s.tokenizer.c_str());
    return 0;
  }
  return usage_error("cannot understand the arguments");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const tessera::SettingNames names{{"export.dtype", "--dtype"},
                                      {"export.format", "--format"},
                                      {"export.vocab_size", "--vocab"},
                                      {"export.out", "OUT"}};
    return tessera::reword_setting_errors(names, [&] { return run(argc, argv); });
  } catch (const tessera::CheckpointError& e) {
    std::fprintf(stderr, "tessera_ckpt: error (%s): %s\n", tessera::checkpoint_error_kind_name(e.kind()), e.what());
    return 1;
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_ckpt: error: %s\n", e.what());
    return 1;
  }
}
