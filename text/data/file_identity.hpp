// FileIdentity: what a run knows of a data file it opened — device and inode, size, modification
// time and a hash of its first bytes (the header) — so a later read can tell that the file at the
// path is no longer the one it opened: replaced (a new inode: tessera_prepare re-run into the same
// path writes a new file and renames it over the old), truncated or grown (the size), or rewritten in
// place (a new modification time and another header). The check costs one stat(), and one read of
// the header only when the modification time moved.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

struct FileIdentity {
  std::uint64_t device = 0, inode = 0;
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t header_hash = 0;  // XXH3-64 of the first kHeaderBytes (or fewer) bytes

  static constexpr std::int64_t kHeaderBytes = 1024;

  // The identity of the open file `fd` at `path`. Throws std::runtime_error naming the path on I/O errors.
  static FileIdentity of(int fd, const std::string& path);
  // "" when the file at `path` is still this one; else what changed, in words ("it was replaced by
  // another file", "its size changed from 1024 to 512 bytes", "it was removed", "its header changed").
  std::string what_changed(const std::string& path) const;
};

}  // namespace tessera
