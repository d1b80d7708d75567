// WorkerStream: a Stream whose work runs on its own host thread, one item after another in issue
// order (the CPU device's copy stream). Issuing never blocks; record() returns an event the worker
// completes when it reaches it; wait(event) makes the worker (not the caller) wait.
#pragma once

#include <exception>
#include <mutex>

#include "tessera/core/serial_executor.hpp"
#include "tessera/runtime/stream.hpp"

namespace tessera {

class WorkerStream final : public Stream {
 public:
  explicit WorkerStream(StreamRole role) : role_(role) {}
  // Waits for the work already queued (nothing is dropped halfway), then stops the worker.
  ~WorkerStream() override;
  WorkerStream(const WorkerStream&) = delete;
  WorkerStream& operator=(const WorkerStream&) = delete;

  StreamRole role() const override { return role_; }
  Event record() override;
  void wait(const Event& event) override;
  void launch_host_function(std::function<void()> fn) override;
  void synchronize() override;

 private:
  void fail(std::exception_ptr error);
  std::exception_ptr error() const;

  StreamRole role_;
  mutable std::mutex mutex_;
  std::exception_ptr error_;         // the first failure, kept for the stream's life
  detail::SerialExecutor executor_;  // last: its thread stops before the members above go away
};

}  // namespace tessera
