// OffloadFile: one rank's file of offloaded state, <dir>/tessera-offload-rank<R>.bin. Opening it
// checks the directory (exists, is a directory, is writable) and takes an exclusive lock on the
// file, so two live jobs given the same directory are refused instead of overwriting each other's
// state; a file left by a killed run (nobody holds its lock) is stale and is truncated, never read.
// O_DIRECT is used when the file system accepts it (probed with one aligned write). reserve()
// checks the file system's free space (statvfs) before allocating the file's blocks. The file is
// removed when the object is destroyed (a clean exit or an unwinding error).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace tessera {

// Offsets, sizes and buffer addresses of O_DIRECT transfers are multiples of this.
inline constexpr std::int64_t kDirectIoAlignment = 4096;

class OffloadFile {
 public:
  // Throws SettingError("offload.path") for a missing, non-directory or unwritable `dir`, or a file
  // another running process holds. `try_direct` false opens it buffered.
  OffloadFile(const std::filesystem::path& dir, int rank, bool try_direct);
  ~OffloadFile();
  OffloadFile(const OffloadFile&) = delete;
  OffloadFile& operator=(const OffloadFile&) = delete;

  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return path_; }
  bool direct() const { return direct_; }
  // Why O_DIRECT is not used ("" when it is, or was not asked for).
  const std::string& direct_refusal() const { return direct_refusal_; }
  // True when a file of an earlier run was found (and replaced).
  bool replaced_stale() const { return replaced_stale_; }
  // The file system's name when the directory is in memory (tmpfs, ramfs: /dev/shm, often /tmp in
  // containers), where the offloaded state takes host memory instead of disk; "" otherwise.
  const std::string& memory_file_system() const { return memory_file_system_; }

  // Makes the file `bytes` long with its blocks allocated. Throws SettingError("offload.path") when
  // the file system has less free space than that.
  void reserve(std::int64_t bytes);

  static std::string file_name(int rank);  // "tessera-offload-rank<R>.bin"

 private:
  void open_file(bool direct);

  std::filesystem::path dir_, path_;
  int fd_ = -1;
  bool direct_ = false, replaced_stale_ = false;
  std::string direct_refusal_;
  std::string memory_file_system_;
};

}  // namespace tessera
