// find_resume_target (every rank looks; they must agree) and read_saved_run_fields (rank 0 reads,
// every rank gets its answer).
#include "tessera/checkpointing/resume_target.hpp"

#include <algorithm>
#include <functional>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/rank_agreement.hpp"
#include "tessera/checkpointing/rank_hosts.hpp"
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
  // Every rank looks for itself, so a directory that differs between nodes cannot go unseen: each
  // rank's answer is the checkpoint it found, "" for none, or "?" and why it could not look.
  const bool automatic = options.resume == "auto";
  const fs::path where = automatic ? fs::path(options.dir) : fs::path(options.resume);
  std::string mine;
  try {
    if (const auto target = resolve_checkpoint(where)) mine = target->string();
  } catch (const std::exception& e) {
    mine = std::string("?") + e.what();
  }
  const std::vector<std::string> answers = all_gather_strings(world, mine);
  if (std::adjacent_find(answers.begin(), answers.end(), std::not_equal_to<>()) != answers.end()) {
    const std::vector<std::string> hosts = gather_host_names(world);
    std::string found;
    std::vector<std::string> distinct;
    for (const std::string& answer : answers) {
      if (std::find(distinct.begin(), distinct.end(), answer) == distinct.end()) distinct.push_back(answer);
    }
    for (const std::string& answer : distinct) {
      std::vector<int> ranks;
      for (int r = 0; r < world.size(); ++r) {
        if (answers[static_cast<std::size_t>(r)] == answer) ranks.push_back(r);
      }
      if (!found.empty()) found += "; ";
      found += ranks_with_hosts(ranks, hosts) + (ranks.size() == 1 ? " finds " : " find ") +
               (answer.empty()     ? std::string("no checkpoint")
                : answer[0] == '?' ? "an error (" + answer.substr(1) + ")"
                                   : fs::path(answer).filename().string());
    }
    throw CheckpointError(CheckpointErrorKind::kMissingFile,
                          "resume " + options.resume + ": the ranks do not find the same checkpoint in " +
                              where.string() + ": " + found +
                              ". The directory is not the same on every node (a node-local disk under the same "
                              "path?); resume from a directory every node mounts, or copy the checkpoint there");
  }
  if (!mine.empty() && mine[0] == '?') throw CheckpointError(CheckpointErrorKind::kIo, mine.substr(1));
  if (mine.empty() && !automatic) {
    throw CheckpointError(CheckpointErrorKind::kMissingFile,
                          "resume target " + options.resume +
                              ": no checkpoint there (expected a checkpoint directory with " + kMetaFileName +
                              " or a run directory with step_* checkpoints)");
  }
  if (mine.empty()) return std::nullopt;
  return fs::path(mine);
}

std::map<std::string, std::string> read_saved_run_fields(const fs::path& target, Communicator& world) {
  std::string fields;
  run_and_agree(world, [&] {
    if (world.rank() == 0) fields = encode(read_meta_file((target / kMetaFileName).string()).config.run());
  });
  return decode(broadcast_string(world, fields, 0));
}

}  // namespace tessera
