// ProgressDisplay on pipes standing for stdout and stderr. Plain (not a terminal): exactly one
// time-stamped line per logged step and per event, no live line. Live (a terminal): replayed on a
// small terminal model, the logged steps and events stay as whole lines, the live line shows the
// latest step below them and is gone after finish(); warnings go to stderr with their rank and
// the live line is drawn again after them. Quiet: nothing of its own, warnings still reach stderr.
#include "tessera/training/progress_display.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <vector>

namespace tessera {
namespace {

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { EXPECT_EQ(::pipe(fds), 0); }
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  // Everything written so far (the writer end must be closed first).
  std::string read_all() {
    ::close(fds[1]);
    fds[1] = -1;
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// What a terminal shows after `bytes`: the finished lines, and the line the cursor is on.
struct Screen {
  std::vector<std::string> lines;
  std::string current;
};

Screen replay(const std::string& bytes) {
  Screen screen;
  std::size_t column = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (c == '\r') {
      column = 0;
    } else if (c == '\033' && bytes.compare(i, 3, "\033[K") == 0) {
      screen.current.resize(column);
      i += 2;
    } else if (c == '\n') {
      screen.lines.push_back(screen.current);
      screen.current.clear();
      column = 0;
    } else {
      if (column < screen.current.size()) {
        screen.current[column] = c;
      } else {
        screen.current += c;
      }
      ++column;
    }
  }
  return screen;
}

ProgressFigures step(std::int64_t s, std::int64_t total) {
  ProgressFigures f;
  f.step = s;
  f.total_steps = total;
  f.loss = 5.0f - 0.5f * static_cast<float>(s);
  f.tokens_per_s = 1000.0;
  f.elapsed_s = static_cast<double>(s);
  f.eta_s = static_cast<double>(total - s);
  return f;
}

TEST(ProgressDisplay, PlainHasOneTimeStampedLinePerLoggedStepAndEvent) {
  Pipe out, err;
  {
    ProgressDisplay display(ProgressStyle::kPlain, out.fds[1], err.fds[1]);
    for (int s = 1; s <= 6; ++s) {
      display.update(step(s, 6));
      if (s % 2 == 0) display.log_step(step(s, 6));
    }
    display.line("step     6 | val loss 2.0000");
    warn(0, "something to know");
    display.finish();
  }
  const std::vector<std::string> lines = lines_of(out.read_all());
  const std::regex stamped(R"((\d\d:\d\d:\d\d) (.*))");
  ASSERT_EQ(lines.size(), 5u) << "the date, 3 logged steps and 1 event";
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(R"(date \d{4}-\d\d-\d\d \(the times below are local, UTC[+-]\d\d:\d\d\))")))
      << lines[0];
  std::smatch m;
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(std::regex_match(lines[i + 1], m, stamped)) << lines[i + 1];
    EXPECT_EQ(m[2].str(), logged_step_line(step(2 * static_cast<int>(i) + 2, 6)));
    EXPECT_LT(lines[i + 1].size(), 100u) << lines[i + 1];
  }
  ASSERT_TRUE(std::regex_match(lines[4], m, stamped)) << lines[4];
  EXPECT_EQ(m[2].str(), "step     6 | val loss 2.0000");
  EXPECT_EQ(err.read_all(), "rank 0: warning: something to know\n");
}

TEST(ProgressDisplay, LiveKeepsWholeLinesAboveTheLiveLine) {
  Pipe out, err;
  Screen before_finish;
  {
    ProgressDisplay display(ProgressStyle::kLive, out.fds[1], err.fds[1], std::chrono::milliseconds(0));
    for (int s = 1; s <= 5; ++s) {
      display.update(step(s, 10));
      if (s == 2) display.log_step(step(s, 10));
      if (s == 4) display.line("checkpoint: saved step 4 to run/step_0000004 (1.00 MiB in 0.10 s)");
    }
    warn(3, "memory grew");
    display.update(step(6, 10));
  }
  const std::string bytes = out.read_all();
  const Screen screen = replay(bytes);
  EXPECT_EQ(screen.lines,
            (std::vector<std::string>{logged_step_line(step(2, 10)),
                                      "checkpoint: saved step 4 to run/step_0000004 (1.00 MiB in 0.10 s)"}))
      << bytes;
  EXPECT_EQ(screen.current, "") << "finish() clears the live line";
  // Before finishing, the terminal showed the latest step's live line under them.
  const Screen live = replay(bytes.substr(0, bytes.rfind("\r\033[K")));
  EXPECT_EQ(live.current, live_progress_line(step(6, 10))) << bytes;
  EXPECT_EQ(err.read_all(), "rank 3: warning: memory grew\n");
}

TEST(ProgressDisplay, QuietDrawsNothingButTakesWarnings) {
  Pipe out, err;
  {
    ProgressDisplay display(ProgressStyle::kQuiet, out.fds[1], err.fds[1]);
    display.update(step(1, 2));
    display.log_step(step(1, 2));
    display.line("step     1 | val loss 1.0000");
    warn(1, "from another rank");
  }
  EXPECT_EQ(out.read_all(), "");
  EXPECT_EQ(err.read_all(), "rank 1: warning: from another rank\n");
}

}  // namespace
}  // namespace tessera
