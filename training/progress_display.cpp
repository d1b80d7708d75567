// ProgressDisplay: the live line and the lines kept above it.
#include "tessera/training/progress_display.hpp"

#include <unistd.h>

#include "tessera/training/time_format.hpp"

namespace tessera {
namespace {

constexpr const char* kClearLine = "\r\033[K";        // to the line's start, erase to its end
constexpr std::chrono::milliseconds kOrderWait(200);  // a stdout line waits this long for its turn

}  // namespace

ProgressStyle progress_style_of(int fd) { return ::isatty(fd) == 1 ? ProgressStyle::kLive : ProgressStyle::kPlain; }

ProgressDisplay::ProgressDisplay(ProgressStyle style, int out_fd, int err_fd, std::chrono::milliseconds redraw_interval)
    : style_(style), out_(out_fd), err_(err_fd), redraw_interval_(redraw_interval) {
  sink_ = std::make_unique<ScopedRankLineSink>([this](const std::string& text) {
    if (style_ == ProgressStyle::kLive) {
      above(text, err_);
    } else {
      err_.post(text);
    }
  });
}

ProgressDisplay::~ProgressDisplay() {
  finish();
  sink_.reset();
}

void ProgressDisplay::above(const std::string& text, LogWriter& writer) {
  std::lock_guard lock(mutex_);
  if (!live_.empty()) {
    out_.post_text(kClearLine);
    if (&writer != &out_) out_.flush(kOrderWait);  // the clearing reaches the terminal first
  }
  writer.post(text);
  if (!live_.empty()) {
    if (&writer != &out_) writer.flush(kOrderWait);
    out_.post_text(kClearLine + live_);
  }
}

void ProgressDisplay::update(const ProgressFigures& figures) { draw(figures, false); }

void ProgressDisplay::draw(const ProgressFigures& figures, bool always) {
  if (style_ != ProgressStyle::kLive) return;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  const bool due = live_.empty() || figures.step >= figures.total_steps || now - last_draw_ >= redraw_interval_;
  if (!always && !due) return;
  live_ = live_progress_line(figures);
  last_draw_ = now;
  out_.post_text(kClearLine + live_);
}

void ProgressDisplay::log_step(const ProgressFigures& figures) {
  line(logged_step_line(figures));
  draw(figures, true);
}

void ProgressDisplay::line(const std::string& text) {
  switch (style_) {
    case ProgressStyle::kLive: above(text, out_); break;
    case ProgressStyle::kPlain: {
      const std::string stamp = iso8601_local(std::chrono::system_clock::now());  // 2024-05-01T12:34:56+02:00
      std::lock_guard lock(mutex_);
      if (stamp.compare(0, 10, date_) != 0) {
        date_ = stamp.substr(0, 10);
        out_.post("date " + date_ + " (the times below are local, UTC" + stamp.substr(19) + ")");
      }
      out_.post(stamp.substr(11, 8) + " " + text);
      break;
    }
    case ProgressStyle::kQuiet: break;
  }
}

void ProgressDisplay::finish() {
  {
    std::lock_guard lock(mutex_);
    if (!live_.empty()) out_.post_text(kClearLine);
    live_.clear();
  }
  out_.flush();
  err_.flush();
}

}  // namespace tessera
