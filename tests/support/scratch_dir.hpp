// ScratchDir: a fresh directory under the system's temporary directory for one test, removed at
// the end (after unmounting anything mounted inside), and small tmpfs file systems mounted in it
// (full disks, read-only disks). Mounting needs root or CAP_SYS_ADMIN: mount_tmpfs says why it
// could not, and the test skips with that reason.
#pragma once

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace tessera::testing {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name) {
    std::string pattern = (std::filesystem::temp_directory_path() / ("tessera_" + name + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    for (const auto& mounted : mounts_) ::umount2(mounted.c_str(), MNT_DETACH);
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  // Mounts a tmpfs of `bytes` at <dir>/<name> (read-only when asked). Returns "" on success, else
  // why it could not.
  std::string mount_tmpfs(const std::string& name, std::int64_t bytes, bool read_only = false) {
    const std::filesystem::path at = path_ / name;
    std::filesystem::create_directories(at);
    const std::string options = "size=" + std::to_string(bytes);
    const unsigned long flags = read_only ? MS_RDONLY : 0;
    if (::mount("tmpfs", at.c_str(), "tmpfs", flags, options.c_str()) != 0) {
      return std::string("cannot mount a tmpfs at ") + at.string() + ": " + std::strerror(errno) +
             " (mounting needs root or CAP_SYS_ADMIN)";
    }
    mounts_.push_back(at);
    return "";
  }

 private:
  std::filesystem::path path_;
  std::vector<std::filesystem::path> mounts_;
};

}  // namespace tessera::testing
