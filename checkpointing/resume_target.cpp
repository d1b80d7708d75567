// find_resume_target and read_saved_run_fields: rank 0 looks, every rank gets the same answer.
#include "tessera/checkpointing/resume_target.hpp"

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/rank_agreement.hpp"
#include "tessera/comm/host_collectives.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

// "<length>:<text>" for each key and value: values may hold any character.
std::string encode(const std::map<std::string, std::string>& fields) {
  std::string out;
  for (const auto& [key, value] : fields) {
    for (const std::string* text : {&key, &value}) {
      out += std::to_string(text->size());
      out += ':';
      out += *text;
    }
  }
  return out;
}

std::map<std::string, std::string> decode(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::size_t at = 0;
  const auto next = [&] {
    const std::size_t colon = text.find(':', at);
    const std::size_t length = std::stoull(text.substr(at, colon - at));
    std::string item = text.substr(colon + 1, length);
    at = colon + 1 + length;
    return item;
  };
  while (at < text.size()) {
    std::string key = next();
    fields[key] = next();
  }
  return fields;
}

}  // namespace

std::optional<fs::path> find_resume_target(const CheckpointOptions& options, Communicator& world) {
  if (options.resume.empty()) return std::nullopt;
  std::string resolved;  // rank 0 decides, every rank follows
  std::string error;
  if (world.rank() == 0) {
    const bool automatic = options.resume == "auto";
    const fs::path where = automatic ? fs::path(options.dir) : fs::path(options.resume);
    if (auto target = resolve_checkpoint(where)) {
      resolved = target->string();
    } else if (!automatic) {
      error = "resume target " + options.resume + ": no checkpoint there (expected a checkpoint directory with " +
              kMetaFileName + " or a run directory with step_* checkpoints)";
    }
  }
  error = broadcast_string(world, error, 0);
  if (!error.empty()) throw CheckpointError(CheckpointErrorKind::kMissingFile, error);
  resolved = broadcast_string(world, resolved, 0);
  if (resolved.empty()) return std::nullopt;
  return fs::path(resolved);
}

std::map<std::string, std::string> read_saved_run_fields(const fs::path& target, Communicator& world) {
  std::string fields;
  run_and_agree(world, [&] {
    if (world.rank() == 0) fields = encode(read_meta_file((target / kMetaFileName).string()).config.run());
  });
  return decode(broadcast_string(world, fields, 0));
}

}  // namespace tessera
