// session_directory_problem: a probe file written, synced and removed in MPI's temporary directory.
#include "tessera/launch/session_directory.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tessera {

std::string session_directory_problem() {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string dir = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  const std::string named = tmpdir != nullptr && *tmpdir != '\0' ? "TMPDIR=" + dir : dir + " (TMPDIR is not set)";
  std::string pattern = dir + "/tessera-session-probe-XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  int error = fd < 0 ? errno : 0;
  if (fd >= 0) {
    const std::vector<char> block(64 * 1024, 0);
    std::size_t done = 0;
    while (done < block.size()) {
      const ssize_t n = ::write(fd, block.data() + done, block.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = n < 0 ? errno : ENOSPC;
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    if (error == 0 && ::fsync(fd) != 0 && errno != EINVAL) error = errno;
    ::close(fd);
    ::unlink(pattern.c_str());
  }
  if (error == 0) return "";
  return named + ": cannot write a file there (" + std::strerror(error) +
         "); MPI keeps its session directory there: set TMPDIR to a writable directory with free space";
}

}  // namespace tessera
