// RunDirectoryLock: flock on DIR/.lock, the holder's host and PID written into it.
#include "tessera/checkpointing/run_directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "tessera/checkpointing/format/checkpoint_error.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

constexpr std::size_t kMaxHolderLine = 256;  // what is read back of a lock file (it may be anything)
constexpr const char* kReleased = "released";

std::string read_holder(int fd) {
  char text[kMaxHolderLine];
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string line(text, n > 0 ? static_cast<std::size_t>(n) : 0);
  if (const auto end = line.find('\n'); end != std::string::npos) line.resize(end);
  return line;
}

std::string this_holder() {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char started[32];
  std::strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(host) + " " + std::to_string(::getpid()) + " " + started;
}

// "host n1, PID 41233, started 2026-..." from a holder line (or the line itself when it is not one).
std::string describe(const std::string& line) {
  char host[128], started[64];
  long pid = 0;
  if (std::sscanf(line.c_str(), "%127s %ld %63s", host, &pid, started) == 3) {
    return std::string("host ") + host + ", PID " + std::to_string(pid) + ", started " + started;
  }
  return "'" + line.substr(0, 80) + "'";
}

}  // namespace

RunDirectoryLock::RunDirectoryLock(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw CheckpointError(CheckpointErrorKind::kIo, "cannot create the checkpoint directory " + dir.string() + ": " +
                                                        ec.message() + "; choose a directory this process can write");
  }
  const fs::path path = dir / kRunLockName;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw CheckpointError(CheckpointErrorKind::kIo, "the checkpoint directory " + dir.string() +
                                                        " is not writable: " + std::strerror(errno) +
                                                        " (creating its lock file " + kRunLockName +
                                                        "); choose a directory this process can write");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int saved = errno;
    const std::string holder = read_holder(fd_);
    ::close(fd_);
    fd_ = -1;
    if (saved == EWOULDBLOCK) {
      throw CheckpointError(CheckpointErrorKind::kIo,
                            dir.string() + " is in use by another job (" + describe(holder) +
                                "): one job per checkpoint directory; wait for that job to end, stop it, or "
                                "choose another directory");
    }
    throw CheckpointError(CheckpointErrorKind::kIo,
                          "cannot lock the run lock " + path.string() + ": " + std::strerror(saved));
  }
  const std::string before = read_holder(fd_);
  if (!before.empty() && before != kReleased) previous_holder_ = before;
  const std::string line = this_holder() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    const int saved = errno;
    ::close(fd_);
    fd_ = -1;
    throw CheckpointError(CheckpointErrorKind::kIo, "cannot write the run lock " + path.string() + ": " +
                                                        std::strerror(saved));
  }
}

RunDirectoryLock::~RunDirectoryLock() {
  if (fd_ < 0) return;
  // A clean release says so, so the next holder does not take this process for a crashed one.
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t n = ::pwrite(fd_, kReleased, std::strlen(kReleased), 0);
  }
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace tessera
