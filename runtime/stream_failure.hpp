// StreamFailure: the failure record of a Stream whose host functions run later than they are
// queued (a CUDA stream's cudaLaunchHostFunc callbacks), so that "an event recorded after a failure
// completes with it" (runtime/stream.hpp) holds although the failure is only known once the host
// function ran.
//   position = failure.issue();         // when a host function is queued, in queue order
//   ... later, on the stream:  run it; failure.fail(position, error) if it threw; failure.done(position)
//   recorded = failure.issued();        // when an event is recorded: it covers positions <= recorded
//   failure.through(recorded)           // once the event completed: the failure it completes with
// Host functions of one stream run in queue order, so done() positions arrive in increasing order.
// Thread-safe.
#pragma once

#include <cstdint>
#include <exception>
#include <mutex>

namespace tessera {

class StreamFailure {
 public:
  // A position for a host function queued now (1, 2, ...).
  std::uint64_t issue();
  // Positions issued so far: an event recorded now follows every one of them.
  std::uint64_t issued() const;
  // The host function at `position` threw `error`. The failure at the lowest position is kept.
  void fail(std::uint64_t position, std::exception_ptr error);
  // The host function at `position` has run (after fail() when it threw).
  void done(std::uint64_t position);

  // The kept failure when it happened at a position <= `position`, else null.
  std::exception_ptr through(std::uint64_t position) const;
  std::exception_ptr first() const;
  // True when some host function at a position <= `position` has not run yet, so through(position)
  // may still change.
  bool unsettled_through(std::uint64_t position) const;

 private:
  mutable std::mutex mutex_;
  std::uint64_t issued_ = 0;
  std::uint64_t done_ = 0;       // highest position that has run
  std::uint64_t failed_at_ = 0;  // position of error_ (0: none)
  std::exception_ptr error_;
};

}  // namespace tessera
