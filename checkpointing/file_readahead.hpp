// FileReadahead: asks the kernel to read byte ranges of one file into the page cache, from a
// background thread, in the order they were added (posix_fadvise POSIX_FADV_WILLNEED). A reader that
// names everything it will read up front then finds it in memory: the disk works at its own pace,
// with many large requests in flight, while the reader copies and verifies what has arrived.
// Only a hint: failures are ignored (the reads themselves report errors), and nothing is read
// into the caller's memory. The destructor stops the thread (after the range it is issuing).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace tessera {

class FileReadahead {
 public:
  // Opens `path` read-only; when it cannot, add() does nothing.
  explicit FileReadahead(const std::string& path);
  ~FileReadahead();
  FileReadahead(const FileReadahead&) = delete;
  FileReadahead& operator=(const FileReadahead&) = delete;

  // Queues bytes [offset, offset + bytes); merged with the previous range when they touch.
  void add(std::int64_t offset, std::int64_t bytes);
  // Bytes handed to the kernel so far (tests).
  std::int64_t issued_bytes() const;

 private:
  struct Range {
    std::int64_t offset = 0, bytes = 0;
  };
  void run();

  int fd_ = -1;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Range> pending_;
  std::int64_t issued_bytes_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tessera
