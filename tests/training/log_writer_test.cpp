// LogWriter: lines (and text without a newline, for a live line) reach the descriptor in order;
// when nobody reads it (a full pipe), post() still returns at once, the oldest lines are dropped and
// counted, flush() gives up after its limit, and a "[N log lines dropped ...]" line follows once
// the reader comes back.
#include "tessera/training/log_writer.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace tessera {
namespace {

std::string read_available(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

TEST(LogWriter, WritesLinesInOrder) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    LogWriter log(fds[1]);
    log.post("first");
    log.printf("step %d | loss %.2f\n", 2, 1.5);
    EXPECT_TRUE(log.flush());
    EXPECT_EQ(log.dropped(), 0);
  }
  ::close(fds[1]);
  EXPECT_EQ(read_available(fds[0]), "first\nstep 2 | loss 1.50\n");
  ::close(fds[0]);
}

TEST(LogWriter, TextGoesOutAsItIs) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    LogWriter log(fds[1]);
    log.post_text("\r\033[Kstep 1/2");
    log.post_text("\r\033[Kstep 2/2");
    log.post_text("");
    log.post("done");
  }
  ::close(fds[1]);
  EXPECT_EQ(read_available(fds[0]), "\r\033[Kstep 1/2\r\033[Kstep 2/2done\n") << "no newline added to text";
  ::close(fds[0]);
}

TEST(LogWriter, AStalledReaderNeverBlocksTheCaller) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::fcntl(fds[1], F_SETPIPE_SZ, 4096);  // a small pipe fills after a few dozen lines
  LogWriter log(fds[1], 64);
  const std::string line(100, 'x');
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20000; ++i) log.post(line + " " + std::to_string(i));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 2.0) << "posting 20000 lines to an unread pipe took " << seconds << " s";
  EXPECT_FALSE(log.flush(std::chrono::milliseconds(100))) << "flush cannot finish while the pipe is full";
  EXPECT_GT(log.dropped(), 19000) << "a queue of 64 lines holds at most 64 of them";

  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (out.find("19999\n") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    out += read_available(fds[0]);
  }
  EXPECT_NE(out.find("log lines dropped: the output was not being read]"), std::string::npos) << out.substr(0, 300);
  EXPECT_NE(out.find(line + " 19999\n"), std::string::npos) << "the newest line is kept";
  EXPECT_TRUE(log.flush());
  ::close(fds[1]);
  ::close(fds[0]);
}

}  // namespace
}  // namespace tessera
