// RunDirectoryLock: one job per checkpoint run directory. Two jobs saving into one directory delete
// each other's temporary saves and interleave their checkpoints; the second one must refuse before
// touching anything. The lock is an advisory lock (flock) on DIR/.lock, held for the whole run by
// the process that takes it (a job's rank 0); the file says who holds it:
//
//   DIR/.lock        "HOST PID STARTED" of the holder, e.g. "n1 41233 2026-11-26T02:14:03Z"
//
// The kernel drops the lock when its process dies (kill -9 included), so a lock file left by a dead
// job is recognised as free: the next job takes it and says whose it was.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace tessera {

inline constexpr const char* kRunLockName = ".lock";

class RunDirectoryLock {
 public:
  // Creates `dir` when missing and takes the lock. Throws CheckpointError(kIo) when another process
  // holds it, naming the directory and the holder's host, PID and start time, and saying what to do;
  // or when the directory or its lock file cannot be created ("the checkpoint directory DIR is not
  // writable: <the system's reason>").
  explicit RunDirectoryLock(const std::filesystem::path& dir);
  // Releases the lock (the file stays, holding the last holder's line). Never throws.
  ~RunDirectoryLock();
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

  // The line of a previous holder that is gone (its process ended without releasing: a crash);
  // nullopt when the file was new or released cleanly.
  const std::optional<std::string>& previous_holder() const { return previous_holder_; }

 private:
  int fd_ = -1;
  std::optional<std::string> previous_holder_;
};

}  // namespace tessera
