// Gate: a host function waits at it until the test opens it, so a stream's later work is held back
// and "not yet" states can be observed. Opening twice is fine; a gate left closed by a failing test
// opens when it goes out of scope, so the stream can drain.
#pragma once

#include <condition_variable>
#include <mutex>

namespace tessera::test {

class Gate {
 public:
  ~Gate() { open(); }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace tessera::test
