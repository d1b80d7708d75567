// LogWriter: a bounded queue drained by a detached-on-exit writer thread.
#include "tessera/training/log_writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

namespace tessera {

struct LogWriter::State {
  int fd;
  std::size_t capacity;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::string> lines;
  std::int64_t dropped = 0;           // total
  std::int64_t unreported_drops = 0;  // since the last "[... dropped]" line
  bool writing = false;               // the thread holds a line it is writing
  bool closing = false;

  // Writes all of `text`; false when the descriptor is gone (EPIPE, EBADF...).
  bool write_all(const std::string& text) const {
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    return true;
  }

  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return closing || !lines.empty(); });
      if (lines.empty()) return;  // closing, nothing left
      std::string text;
      if (unreported_drops > 0) {
        text.append("[").append(std::to_string(unreported_drops));
        text.append(" log lines dropped: the output was not being read]\n");
        unreported_drops = 0;
      }
      while (!lines.empty()) {
        text += lines.front();
        lines.pop_front();
      }
      writing = true;
      lock.unlock();
      const bool ok = write_all(text);
      lock.lock();
      writing = false;
      changed.notify_all();
      if (!ok) {  // nobody reads any more: drop everything from now on
        dropped += static_cast<std::int64_t>(lines.size());
        lines.clear();
        capacity = 0;
      }
    }
  }
};

LogWriter::LogWriter(int fd, std::size_t capacity) : state_(std::make_shared<State>()) {
  state_->fd = fd;
  state_->capacity = capacity;
  std::thread([state = state_] { state->run(); }).detach();
}

LogWriter::~LogWriter() {
  flush();
  std::lock_guard lock(state_->mutex);
  state_->closing = true;
  state_->changed.notify_all();
}

void LogWriter::post(std::string line) {
  if (line.empty() || line.back() != '\n') line += '\n';
  post_text(std::move(line));
}

void LogWriter::post_text(std::string text) {
  if (text.empty()) return;
  std::lock_guard lock(state_->mutex);
  if (state_->capacity == 0) {
    ++state_->dropped;
    return;
  }
  if (state_->lines.size() >= state_->capacity) {
    state_->lines.pop_front();
    ++state_->dropped;
    ++state_->unreported_drops;
  }
  state_->lines.push_back(std::move(text));
  state_->changed.notify_all();
}

void LogWriter::printf(const char* format, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  post(buffer);
}

bool LogWriter::flush(std::chrono::milliseconds limit) {
  std::unique_lock lock(state_->mutex);
  return state_->changed.wait_for(lock, limit, [&] { return state_->lines.empty() && !state_->writing; });
}

std::int64_t LogWriter::dropped() const {
  std::lock_guard lock(state_->mutex);
  return state_->dropped;
}

}  // namespace tessera
