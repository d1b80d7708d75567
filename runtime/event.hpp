// Event: a point in a Stream's work, as a cheap copyable handle (copies share one state).
//   Event done = copy_stream.record();   // completes when everything queued on it so far has run
//   compute_stream.wait(done);           // work queued on compute afterwards starts after it
//   done.synchronize();                  // or: block the host until it completes
// A default-constructed Event is complete. An event recorded after a failure on its stream (a host
// function that threw) completes with that failure: query() says true, synchronize() rethrows it.
// Backends implement the state behind the handle with the same interface a collective's Work uses
// (core/work.hpp): is_completed() never blocks, wait() blocks and rethrows.
#pragma once

#include <exception>
#include <memory>

#include "tessera/core/work.hpp"

namespace tessera {

class Event {
 public:
  Event() = default;  // complete
  explicit Event(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  // True once the event has completed (successfully or with a failure). Never blocks.
  bool query() const { return !state_ || state_->is_completed(); }
  // Blocks the calling host thread until the event has completed; rethrows its failure, if any.
  void synchronize() const {
    if (state_) state_->wait();
  }

  // The backend's state (null for a default-constructed event), for a backend to recognise its own
  // events (e.g. to make a GPU stream wait without blocking the host).
  const std::shared_ptr<detail::WorkState>& state() const { return state_; }

 private:
  std::shared_ptr<detail::WorkState> state_;
};

// An event that has already completed with `error` (synchronize() rethrows it).
Event failed_event(std::exception_ptr error);

}  // namespace tessera
