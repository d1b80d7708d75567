// Watchdog: a thread that watches the collectives a communicator has in flight. When one has not
// completed within the timeout it builds a message saying which rank waits in which collective and
// for how long, and calls the timeout handler — by default abort_job(), so a lost peer or a rank
// that skipped a collective ends the job with a message instead of a silent hang.
// Backends call begin() when a collective starts and end() when it completes; a backend whose
// completion is only observable by polling (a CUDA event) passes a probe that the watchdog polls.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace tessera {

class Watchdog {
 public:
  using TimeoutHandler = std::function<void(const std::string& message)>;
  using CompletionProbe = std::function<bool()>;  // true once the collective has completed

  // `where` names the rank in messages, e.g. "rank 1/4 (host node17)". A null handler means
  // abort_job(message). The handler runs on the watchdog thread, at most once per Watchdog; after
  // it returns the watchdog stops watching.
  Watchdog(std::chrono::milliseconds timeout, std::string where, TimeoutHandler on_timeout = {});
  ~Watchdog();  // stops the thread; never waits for a collective
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts the clock for one collective, described as in "#3 all_reduce(count=8, f32, sum) on
  // communicator 'world'". Returns the ticket to pass to end().
  std::uint64_t begin(std::string what, CompletionProbe probe = {});
  // The same, with the description formatted by `describe` only when a timeout message needs it
  // (for a backend that starts collectives every few microseconds). `describe` runs on the watchdog
  // thread before end(ticket) returns, so it may refer to what lives until then.
  std::uint64_t begin_lazy(std::function<std::string()> describe);
  void end(std::uint64_t ticket) noexcept;

  // Polling period for probes and the finest granularity of the timeout.
  static constexpr std::chrono::milliseconds kPollInterval{50};

 private:
  // Timeouts are seconds long, so the kernel's clock as of its last tick (CLOCK_MONOTONIC_COARSE,
  // a few milliseconds of resolution) is precise enough, and reading it costs a fraction of
  // steady_clock's read — paid at every collective's begin().
  struct Clock {
    using duration = std::chrono::nanoseconds;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::time_point<Clock>;
    static constexpr bool is_steady = true;
    static time_point now() noexcept;
  };
  struct Entry {
    std::string what;
    std::function<std::string()> describe;  // when set, formats `what`
    Clock::time_point start;
    CompletionProbe probe;
  };

  void run();
  std::string timeout_message(const Entry& entry, Clock::time_point now) const;

  const std::chrono::milliseconds timeout_;
  const std::string where_;
  const TimeoutHandler on_timeout_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::uint64_t, Entry> entries_;  // by ticket: the oldest first
  // The node of the last entry ended, reused by the next begin: a backend that runs one collective
  // at a time then allocates nothing per collective.
  std::map<std::uint64_t, Entry>::node_type spare_;
  std::uint64_t next_ticket_ = 1;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tessera
