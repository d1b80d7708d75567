// InlineStream: a Stream whose work runs on the calling thread when it is issued, so every event is
// complete when recorded (unless the stream has failed). The CPU device's compute and communication
// streams, and every stream of the meta device.
#pragma once

#include <exception>
#include <mutex>

#include "tessera/runtime/stream.hpp"

namespace tessera {

class InlineStream final : public Stream {
 public:
  explicit InlineStream(StreamRole role) : role_(role) {}

  StreamRole role() const override { return role_; }
  Event record() override;
  // Blocks the caller until `event` completes; a failed event fails this stream.
  void wait(const Event& event) override;
  // Runs `fn` now; an exception it throws becomes the stream's failure.
  void launch_host_function(std::function<void()> fn) override;
  void synchronize() override;

 private:
  void fail(std::exception_ptr error);

  StreamRole role_;
  std::mutex mutex_;
  std::exception_ptr error_;  // the first failure, kept for the stream's life
};

}  // namespace tessera
