// Stream: an ordered queue of work on a Device (kernels, copies, host functions), like a CUDA stream.
// Each device has one stream per role:
//   kCompute        kernels and modules (the device's kernels() run here)
//   kCommunication  collectives that work on device memory
//   kCopy           asynchronous copies between the device and host memory (offload, snapshots)
// Work queued on one stream runs in the order it was queued; streams are ordered against each other
// only through events (record on one, wait on another).
//
// Failures: a host function that throws does not throw to its caller; the stream keeps the first
// such failure, later work still runs in order, every event recorded after the failure completes
// with it and synchronize() rethrows it (the failure stays with the stream, as a CUDA error does).
//
// CPU device: compute and communication run inline (work runs when issued; their events are complete
// when recorded); the copy stream runs on its own worker thread in issue order.
// CUDA device: three CUDA streams (runtime/cuda/cuda_stream.hpp); events are CUDA events.
#pragma once

#include <functional>

#include "tessera/runtime/event.hpp"

namespace tessera {

enum class StreamRole { kCompute, kCommunication, kCopy };

inline constexpr int kStreamRoleCount = 3;

constexpr const char* stream_role_name(StreamRole role) {
  switch (role) {
    case StreamRole::kCompute: return "compute";
    case StreamRole::kCommunication: return "communication";
    case StreamRole::kCopy: return "copy";
  }
  return "unknown";
}

class Stream {
 public:
  virtual ~Stream() = default;

  virtual StreamRole role() const = 0;

  // An event that completes when all work queued on this stream so far has finished.
  virtual Event record() = 0;
  // Work queued on this stream after this call starts only after `event` has completed. Does not
  // block the host on a device that can wait on its own (the CPU copy stream's worker waits; an
  // inline stream blocks the caller). A failed event fails this stream.
  virtual void wait(const Event& event) = 0;
  // Runs `fn` on the host in stream order (after the work queued before it, before the work queued
  // after it), like cudaLaunchHostFunc. `fn` must not queue work on this stream and wait for it.
  virtual void launch_host_function(std::function<void()> fn) = 0;
  // Blocks the host until all work queued so far has finished; rethrows the stream's failure.
  virtual void synchronize() = 0;
};

}  // namespace tessera
