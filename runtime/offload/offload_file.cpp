// OffloadFile: directory checks, the lock, stale files, the O_DIRECT probe, reservation, removal.
#include "tessera/runtime/offload/offload_file.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tessera/core/setting_error.hpp"
#include "tessera/runtime/memory_tracker.hpp"

namespace tessera {
namespace {

constexpr const char* kSetting = "offload.path";

}  // namespace

std::string OffloadFile::file_name(int rank) { return "tessera-offload-rank" + std::to_string(rank) + ".bin"; }

OffloadFile::OffloadFile(const std::filesystem::path& dir, int rank, bool try_direct) : dir_(dir) {
  if (dir.empty()) throw SettingError(kSetting, "", "NVMe offload needs a directory for its files");
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  if (!std::filesystem::exists(status)) {
    throw SettingError(kSetting, dir.string(), "the directory does not exist; create it or choose another");
  }
  if (!std::filesystem::is_directory(status)) {
    throw SettingError(kSetting, dir.string(), "is not a directory; give a directory for the offload files");
  }
  path_ = dir / file_name(rank);
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) == 0) {
    if (fs.f_type == TMPFS_MAGIC) memory_file_system_ = "tmpfs";
    if (fs.f_type == RAMFS_MAGIC) memory_file_system_ = "ramfs";
  }
  open_file(try_direct);
  if (!direct_) return;
  // Some file systems accept O_DIRECT at open and refuse the transfers: probe with one block.
  void* block =
      std::aligned_alloc(static_cast<std::size_t>(kDirectIoAlignment), static_cast<std::size_t>(kDirectIoAlignment));
  std::memset(block, 0, static_cast<std::size_t>(kDirectIoAlignment));
  const ssize_t wrote = ::pwrite(fd_, block, static_cast<std::size_t>(kDirectIoAlignment), 0);
  const int error = errno;
  std::free(block);
  if (wrote != kDirectIoAlignment) {
    direct_refusal_ = std::string("an O_DIRECT write failed: ") + std::strerror(error);
    ::close(fd_);
    fd_ = -1;
    open_file(false);
  }
  if (::ftruncate(fd_, 0) != 0) {
    throw SettingError(kSetting, dir.string(), "cannot truncate " + path_.string() + ": " + std::strerror(errno));
  }
}

void OffloadFile::open_file(bool direct) {
  int flags = O_RDWR | O_CREAT | O_CLOEXEC;
  if (direct) flags |= O_DIRECT;
  fd_ = ::open(path_.c_str(), flags, 0600);
  if (fd_ < 0 && direct && errno == EINVAL) {
    direct_refusal_ = "the file system refuses O_DIRECT";
    direct = false;
    fd_ = ::open(path_.c_str(), flags & ~O_DIRECT, 0600);
  }
  if (fd_ < 0) {
    throw SettingError(kSetting, dir_.string(),
                       "cannot create " + path_.string() + ": " + std::strerror(errno) + "; give a writable directory");
  }
  direct_ = direct;
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    throw SettingError(kSetting, dir_.string(),
                       path_.string() + " is in use by another running process (" + std::strerror(error) +
                           "); give each job its own offload directory");
  }
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && st.st_size > 0) {
    replaced_stale_ = true;  // left by a run that did not exit cleanly: its bytes are never read
    if (::ftruncate(fd_, 0) != 0) {
      throw SettingError(kSetting, dir_.string(),
                         "cannot truncate the stale " + path_.string() + ": " + std::strerror(errno));
    }
  }
}

OffloadFile::~OffloadFile() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // before closing: the lock is held until the name is gone
  ::close(fd_);
}

void OffloadFile::reserve(std::int64_t bytes) {
  struct statvfs fs {};
  if (::fstatvfs(fd_, &fs) == 0) {
    struct stat st {};
    const std::int64_t held = ::fstat(fd_, &st) == 0 ? static_cast<std::int64_t>(st.st_blocks) * 512 : 0;
    const std::int64_t available = static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize);
    if (bytes - held > available) {
      throw SettingError(kSetting, dir_.string(),
                         "the offloaded state of this rank needs " + std::to_string(bytes) + " bytes (" +
                             format_bytes(bytes) + ") in " + path_.string() + " but the file system has " +
                             std::to_string(available) + " bytes (" + format_bytes(available) +
                             ") free; free space, choose another directory or "
                             "use more ranks");
    }
  }
  const int error = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes));
  if (error == 0) return;
  if (error == ENOSPC || error == EDQUOT) {
    throw SettingError(kSetting, dir_.string(),
                       "no space left for " + std::to_string(bytes) + " bytes of offloaded state in " + path_.string() +
                           "; free space or choose another directory");
  }
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) {  // a file system without fallocate
    throw SettingError(kSetting, dir_.string(), "cannot size " + path_.string() + ": " + std::strerror(errno));
  }
}

}  // namespace tessera
