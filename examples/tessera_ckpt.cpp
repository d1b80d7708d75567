// tessera_ckpt: looks at and converts sharded checkpoints without training.
//
//   tessera_ckpt info DIR                          step, config, world size, sizes
//   tessera_ckpt verify DIR                        checks meta.h5's digests and layout, every shard
//                                                  file's save id and step, and every checksum
//   tessera_ckpt export DIR out.h5 [--dtype f32|bf16]   full weights in one plain HDF5 file
//
// DIR is a checkpoint directory (DIR/step_0000500) or a run directory (its `latest`). Exit status:
// 0 on success, 1 when the checkpoint is missing, truncated, corrupted or of an unknown format (the
// message names the file and dataset), 2 on a usage error.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "checkpointing/checkpoint_error.hpp"
#include "checkpointing/checkpoint_export.hpp"
#include "checkpointing/checkpoint_info.hpp"
#include "checkpointing/meta_digests.hpp"
#include "core/setting_error.hpp"
#include "precision/dtype.hpp"
#include "runtime/memory_tracker.hpp"

namespace {

constexpr const char* kUsage =
    "usage: tessera_ckpt info DIR\n"
    "       tessera_ckpt verify DIR\n"
    "       tessera_ckpt export DIR OUT.h5 [--dtype f32|bf16]\n"
    "DIR: a checkpoint directory (step_NNNNNNN) or a run directory (uses its latest checkpoint)\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "tessera_ckpt: %s\n%s", message.c_str(), kUsage);
  return 2;
}

int run(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("%s", kUsage);
    return args.empty() ? 2 : 0;
  }
  const std::string& command = args[0];
  if (command == "info" && args.size() == 2) {
    std::printf("%s", tessera::describe_checkpoint(args[1]).c_str());
    return 0;
  }
  if (command == "verify" && args.size() == 2) {
    const tessera::VerifySummary v = tessera::verify_checkpoint(args[1]);
    std::printf("%s: step %lld, %s: meta.h5 and its layout are intact, %d shard file(s) belong to this save, every "
                "checksum matches (%s of state read)\n",
                v.dir.c_str(), static_cast<long long>(v.step),
                v.save_id != 0 ? ("save id " + tessera::detail::hex64(v.save_id)).c_str() : "no save id (format 2 or older)",
                v.shard_files, tessera::format_bytes(v.bytes).c_str());
    return 0;
  }
  if (command == "export" && (args.size() == 3 || args.size() == 5)) {
    tessera::DType dtype = tessera::DType::kF32;
    if (args.size() == 5) {
      if (args[3] != "--dtype") return usage_error("unknown option '" + args[3] + "'");
      dtype = tessera::parse_dtype(args[4], "--dtype");
    }
    const tessera::ExportSummary s = tessera::export_checkpoint(args[1], args[2], dtype);
    std::printf("exported step %lld: %lld tensors, %lld values as %s to %s (%s)\n", static_cast<long long>(s.step),
                static_cast<long long>(s.parameters), static_cast<long long>(s.elements), tessera::dtype_name(dtype),
                args[2].c_str(), tessera::format_bytes(s.bytes).c_str());
    return 0;
  }
  return usage_error("cannot understand the arguments");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const tessera::SettingNames names{{"export.dtype", "--dtype"}};
    return tessera::reword_setting_errors(names, [&] { return run(std::vector<std::string>(argv + 1, argv + argc)); });
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
