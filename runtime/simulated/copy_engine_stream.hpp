// CopyEngineStream: the simulated GPU's copy stream. Work runs on a worker thread in issue order, as
// on the CPU device's copy stream, but only once something has asked for it: an event recorded after
// it being waited for (Event::synchronize, another stream's wait), or the stream synchronized. Until
// then queued copies have not happened at all, so a reader that skipped the wait for a copy's event
// finds the destination as the copy left it when issued (NaN bytes), every time, instead of whatever
// the race with a fast copy gave. Event::query() does not ask: it says whether the work has run.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "tessera/runtime/cpu/worker_stream.hpp"

namespace tessera {

class CopyEngineStream final : public Stream {
 public:
  CopyEngineStream() = default;
  // Lets every queued item run, then waits for them (as WorkerStream's destructor does).
  ~CopyEngineStream() override;
  CopyEngineStream(const CopyEngineStream&) = delete;
  CopyEngineStream& operator=(const CopyEngineStream&) = delete;

  StreamRole role() const override { return StreamRole::kCopy; }
  Event record() override;
  void wait(const Event& event) override;
  void launch_host_function(std::function<void()> fn) override;
  void synchronize() override;

  // Lets items up to and including number `item` run (items are numbered from 1 in issue order).
  void release_through(std::uint64_t item);

 private:
  // Queues `fn` on the worker behind the gate; returns its number.
  std::uint64_t post(std::function<void()> fn);
  // The worker's side of the gate: blocks until `item` may run.
  void await_release(std::uint64_t item);

  std::mutex mutex_;
  std::condition_variable released_cv_;
  std::uint64_t issued_ = 0;                // items queued so far
  std::uint64_t released_ = 0;              // items allowed to run
  WorkerStream worker_{StreamRole::kCopy};  // last: drained before the gate goes away
};

}  // namespace tessera
