// FileIdentity from fstat/stat and an XXH3 hash of the header bytes.
#include "tessera/text/data/file_identity.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace tessera {
namespace {

std::int64_t mtime_of(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// hash = XXH3-64 of the first min(size, kHeaderBytes) bytes of `fd`; false when they cannot all be read.
bool hash_first_bytes(int fd, std::int64_t size, std::uint64_t& hash) {
  std::vector<char> bytes(static_cast<std::size_t>(std::min(size, FileIdentity::kHeaderBytes)));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  hash = XXH3_64bits(bytes.data(), done);
  return done == bytes.size();
}

}  // namespace

FileIdentity FileIdentity::of(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw std::runtime_error(path + ": cannot stat: " + std::strerror(errno));
  FileIdentity id;
  id.device = st.st_dev;
  id.inode = st.st_ino;
  id.size = st.st_size;
  id.mtime_ns = mtime_of(st);
  if (!hash_first_bytes(fd, id.size, id.header_hash)) {
    throw std::runtime_error(path + ": cannot read its first bytes: " + std::strerror(errno));
  }
  return id;
}

std::string FileIdentity::what_changed(const std::string& path) const {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT ? "it was removed" : std::string("it cannot be read any more: ") + std::strerror(errno);
  if (st.st_dev != device || st.st_ino != inode) return "it was replaced by another file";
  if (st.st_size != size) {
    return "its size changed from " + std::to_string(size) + " to " + std::to_string(st.st_size) + " bytes";
  }
  if (mtime_of(st) == mtime_ns) return "";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string("it cannot be read any more: ") + std::strerror(errno);
  std::uint64_t hash = 0;
  const bool read = hash_first_bytes(fd, size, hash);
  ::close(fd);
  if (!read || hash != header_hash) return "it was rewritten (its header changed)";
  return "";
}

}  // namespace tessera
