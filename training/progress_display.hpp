// ProgressDisplay: where a training loop's progress goes, on rank 0 of the run.
//  * kLive (stdout is a terminal): a live line rewritten in place ("\r" + clear-to-end) at every
//    step — step/total, loss, tokens/s, elapsed, ETA (progress_line.hpp) — with logged steps,
//    validation and checkpoint lines, and the warnings of warn() (core/warning.hpp), printed as
//    whole lines above it.
//  * kPlain (a Slurm log, a pipe): no live line; one line per logged step and per event, each
//    with the local time of day in front ("12:34:56 "), and a line naming the date and the UTC
//    offset before the first line and whenever the date changes:
//      date 2024-05-01 (the times below are local, UTC+02:00)
//  * kQuiet (the other ranks): nothing of its own.
// Lines are written by LogWriter threads (training/log_writer.hpp), so a stalled stdout or stderr
// never stalls training. While it lives, warn() and print_rank_notice() lines go through it (to
// stderr, off the caller's thread) in every style.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "tessera/core/warning.hpp"
#include "tessera/training/log_writer.hpp"
#include "tessera/training/progress_line.hpp"

namespace tessera {

enum class ProgressStyle { kLive, kPlain, kQuiet };

// kLive when `fd` is a terminal, else kPlain.
ProgressStyle progress_style_of(int fd);

class ProgressDisplay {
 public:
  // redraw_interval: the live line is redrawn at most this often (the last step always).
  explicit ProgressDisplay(ProgressStyle style, int out_fd = 1, int err_fd = 2,
                           std::chrono::milliseconds redraw_interval = std::chrono::milliseconds(100));
  // finish()es.
  ~ProgressDisplay();
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  // After every step: redraws the live line (kLive).
  void update(const ProgressFigures& figures);
  // A logged step: its line (logged_step_line), kept above the live line, which shows this step.
  void log_step(const ProgressFigures& figures);
  // A whole line of the loop (validation, checkpoint, stop), kept above the live line.
  void line(const std::string& text);
  // Clears the live line and waits (a bounded time) until everything queued was written; later
  // output of the program then starts on a clean line.
  void finish();

 private:
  void above(const std::string& text, LogWriter& writer);
  void draw(const ProgressFigures& figures, bool always);

  ProgressStyle style_;
  LogWriter out_, err_;
  std::chrono::milliseconds redraw_interval_;
  std::mutex mutex_;
  std::string live_;  // the live line on the terminal now ("" when none)
  std::string date_;  // kPlain: the date of the last line (YYYY-MM-DD)
  std::chrono::steady_clock::time_point last_draw_;
  std::unique_ptr<ScopedRankLineSink> sink_;  // last: removed before the writers go
};

}  // namespace tessera
