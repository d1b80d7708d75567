// LogWriter: writes a training loop's log lines to a file descriptor (stdout) from a background
// thread, so the loop never blocks on its output. Under mpirun, rank 0's stdout is a pipe or pty
// that mpirun drains; when mpirun stops reading (it is shutting down after a SIGTERM, or a terminal
// is paused), a plain printf blocks rank 0 before its next collective, every other rank waits for
// it, and the checkpoint a stop signal asked for is never written.
//
// post() only appends to a bounded queue; when the queue is full (the descriptor is not being
// read), the oldest lines are dropped and counted, and a "[N log lines dropped ...]" line says so
// once writing resumes. flush() waits for the queue to empty, but at most a given time. The
// destructor waits as flush() does, then leaves a thread still stuck in write() to the process's
// exit instead of blocking on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tessera {

class LogWriter {
 public:
  // fd: where lines go (1: stdout); capacity: lines held while the descriptor is not read.
  explicit LogWriter(int fd = 1, std::size_t capacity = 1024);
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Queues `line` (a trailing newline is added when missing). Never blocks on the descriptor.
  void post(std::string line);
  // Queues `text` as it is, no newline added (a terminal line rewritten in place with "\r").
  void post_text(std::string text);
  // printf-style post.
  void printf(const char* format, ...) __attribute__((format(printf, 2, 3)));
  // Waits until every queued line was written, or `limit` passed; true when everything was written.
  bool flush(std::chrono::milliseconds limit = std::chrono::milliseconds(2000));

  std::int64_t dropped() const;  // lines dropped so far because the queue was full

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the writer thread, which may outlive this object
};

}  // namespace tessera
