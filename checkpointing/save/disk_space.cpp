// statvfs, a probe file, and the disk-full message.
#include "tessera/checkpointing/save/disk_space.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tessera/runtime/memory_tracker.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

std::string bytes_text(std::int64_t bytes) { return std::to_string(bytes) + " bytes (" + format_bytes(bytes) + ")"; }

}  // namespace

std::int64_t free_bytes(const fs::path& path) {
  struct statvfs info {};
  if (::statvfs(path.c_str(), &info) != 0) return -1;
  return static_cast<std::int64_t>(info.f_bavail) * static_cast<std::int64_t>(info.f_frsize);
}

void check_checkpoint_space(const fs::path& dir, std::int64_t bytes_needed) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw CheckpointError(CheckpointErrorKind::kIo, "cannot create the checkpoint directory " + dir.string() + ": " +
                                                        ec.message() + "; choose a directory this process can write");
  }
  const fs::path probe = dir / ".tessera_write_probe";
  const int fd = ::open(probe.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0 || ::write(fd, "x", 1) != 1) {
    const int saved = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(probe.c_str());
    throw CheckpointError(CheckpointErrorKind::kIo, "the checkpoint directory " + dir.string() +
                                                        " is not writable: " + std::strerror(saved) +
                                                        "; choose a directory this process can write");
  }
  ::close(fd);
  ::unlink(probe.c_str());
  const std::int64_t available = free_bytes(dir);
  if (available >= 0 && available < bytes_needed) {
    throw CheckpointError(CheckpointErrorKind::kIo, "the checkpoint directory " + dir.string() + " has " +
                                                        bytes_text(available) + " free, but one checkpoint needs " +
                                                        bytes_text(bytes_needed) +
                                                        "; free space there or choose another directory");
  }
}

CheckpointError explain_write_failure(const CheckpointError& cause, const fs::path& path, std::int64_t bytes_needed) {
  if (cause.kind() != CheckpointErrorKind::kIo) return cause;
  const std::string text = cause.what();
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::int64_t available = free_bytes(parent);
  const bool full = text.find(std::strerror(ENOSPC)) != std::string::npos ||
                    text.find("errno = 28") != std::string::npos || (available >= 0 && available < bytes_needed);
  if (!full) return cause;
  return CheckpointError(CheckpointErrorKind::kIo,
                         std::string(std::strerror(ENOSPC)) + ": writing " + path.string() + " needs about " +
                             bytes_text(bytes_needed) + ", " + (available >= 0 ? bytes_text(available) : "unknown") +
                             " free on its file system; free space there or write the checkpoint elsewhere");
}

}  // namespace tessera
