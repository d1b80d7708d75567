// HostStreams: the three streams of a device whose work runs on host threads (the CPU device, the
// simulated GPU): compute and communication inline, the copy stream on its own worker thread (a
// WorkerStream, or the one the device gives). Looked up by role, recognised as the device's own, and
// synchronized together.
#pragma once

#include <exception>
#include <memory>

#include "tessera/runtime/cpu/worker_stream.hpp"
#include "tessera/runtime/inline_stream.hpp"

namespace tessera {

class HostStreams {
 public:
  HostStreams() : copy_(std::make_unique<WorkerStream>(StreamRole::kCopy)) {}
  // `copy` (not null) as the copy stream.
  explicit HostStreams(std::unique_ptr<Stream> copy) : copy_(std::move(copy)) {}

  Stream& by_role(StreamRole role);
  // `stream` when it is one of these; throws std::invalid_argument naming `what` otherwise.
  Stream& own(Stream& stream, const char* what);
  Stream& copy() { return *copy_; }
  // Waits for every stream (each one even when an earlier one failed); returns the first failure
  // (null when none) for the device to rethrow once it has done its own part.
  std::exception_ptr synchronize();

 private:
  InlineStream compute_{StreamRole::kCompute};
  InlineStream communication_{StreamRole::kCommunication};
  std::unique_ptr<Stream> copy_;
};

}  // namespace tessera
