// Directory naming, `latest`, stale temporaries, retention and durable renames.
#include "tessera/checkpointing/format/checkpoint_paths.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/core/parse_number.hpp"
#include "tessera/core/warning.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

constexpr const char* kStepPrefix = "step_";
constexpr std::size_t kStepDigits = 7;

[[noreturn]] void throw_errno(const std::string& what, const fs::path& path) {
  throw CheckpointError(CheckpointErrorKind::kIo, what + " " + path.string() + ": " + std::strerror(errno));
}

void fsync_opened(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw_errno("cannot open for fsync", path);
  if (::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    throw_errno("fsync failed for", path);
  }
  ::close(fd);
}

// A step_* entry that is not a checkpoint's name ("step_99999999999999999999", "step_x"): said once
// per path and process, since the directory is listed at every save.
void warn_once_skipped(const fs::path& path) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (!said.insert(path.string()).second) return;
  warn(kLauncherRank, path.string() + ": not a checkpoint (a checkpoint directory is named " + kStepPrefix +
                          "<step number below 2^63>); skipped");
}

}  // namespace

void check_readable_format(std::int64_t version, const std::string& path) {
  if (version >= kOldestReadableFormat && version <= kCheckpointFormatVersion) return;
  const std::string oldest = std::to_string(kOldestReadableFormat), newest = std::to_string(kCheckpointFormatVersion);
  const std::string readable = kOldestReadableFormat == kCheckpointFormatVersion   ? "version " + newest
                               : kOldestReadableFormat + 1 == kCheckpointFormatVersion ? "version " + oldest + " or " + newest
                                                                                     : "versions " + oldest + " to " + newest;
  throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                        path + " has checkpoint format version " + std::to_string(version) + "; this build reads " +
                            readable + ": resume it with the Tessera version that wrote it");
}

std::string step_dir_name(std::int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%07lld", static_cast<long long>(step));
  return name;
}

std::string shard_file_name(int shard) {
  char name[32];
  std::snprintf(name, sizeof name, "shard_%05d.h5", shard);
  return name;
}

std::optional<std::int64_t> parse_step_dir_name(const std::string& name) {
  const std::size_t prefix = std::strlen(kStepPrefix);
  if (name.size() < prefix + kStepDigits || name.compare(0, prefix, kStepPrefix) != 0) return std::nullopt;
  const std::string digits = name.substr(prefix);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return try_parse_integer(digits, 0);  // nullopt beyond 64 bits
}

std::vector<CommittedCheckpoint> list_checkpoints(const fs::path& dir) {
  std::vector<CommittedCheckpoint> found;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return found;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    const std::string name = entry.path().filename().string();
    if (auto step = parse_step_dir_name(name)) {
      found.push_back({*step, entry.path()});
    } else if (name.rfind(kStepPrefix, 0) == 0 && name.find('.') == std::string::npos) {
      warn_once_skipped(dir / name);
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return found;
}

std::optional<fs::path> resolve_checkpoint(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path / kMetaFileName, ec)) return fs::canonical(path, ec);
  const fs::path latest = path / kLatestName;
  if (fs::is_symlink(latest, ec)) {
    const fs::path target = path / fs::read_symlink(latest, ec);
    if (!ec && fs::is_directory(target, ec)) return fs::canonical(target, ec);
  }
  const auto all = list_checkpoints(path);
  if (all.empty()) return std::nullopt;
  return fs::canonical(all.back().path, ec);
}

void update_latest(const fs::path& dir, const std::string& step_dir) {
  const fs::path tmp = dir / (std::string(kLatestName) + ".tmp");
  std::error_code ec;
  fs::remove(tmp, ec);
  if (::symlink(step_dir.c_str(), tmp.c_str()) != 0) throw_errno("cannot create symlink", tmp);
  if (::rename(tmp.c_str(), (dir / kLatestName).c_str()) != 0) throw_errno("cannot rename over", dir / kLatestName);
  fsync_directory(dir);
}

void remove_stale_temporaries(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> stale;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool temporary =
        name.rfind(kStepPrefix, 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
    if (temporary || name.rfind(kDeletedPrefix, 0) == 0) stale.push_back(entry.path());
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

void discard_checkpoint(const fs::path& dir, const fs::path& checkpoint, const std::function<void()>& after_rename) {
  const fs::path trash = dir / (std::string(kDeletedPrefix) + checkpoint.filename().string());
  std::error_code ec;
  fs::remove_all(trash, ec);
  durable_rename(checkpoint, trash);
  if (after_rename) after_rename();
  fs::remove_all(trash, ec);
  if (ec)
    throw CheckpointError(CheckpointErrorKind::kIo,
                          "cannot remove old checkpoint " + trash.string() + ": " + ec.message());
}

void fsync_path(const fs::path& path) { fsync_opened(path, O_RDONLY); }

void fsync_directory(const fs::path& dir) { fsync_opened(dir, O_RDONLY | O_DIRECTORY); }

void durable_rename(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) throw_errno("cannot rename " + from.string() + " to", to);
  fsync_directory(to.parent_path().empty() ? fs::path(".") : to.parent_path());
}

}  // namespace tessera
