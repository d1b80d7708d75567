// Watchdog: sleeps until the oldest watched collective's deadline (or the next probe poll), and
// fires the timeout handler once when a deadline passes.
#include "tessera/comm/watchdog.hpp"

#include <cstdio>
#include <utility>

#include "tessera/comm/job_abort.hpp"

namespace tessera {

Watchdog::Watchdog(std::chrono::milliseconds timeout, std::string where, TimeoutHandler on_timeout)
    : timeout_(timeout), where_(std::move(where)), on_timeout_(std::move(on_timeout)) {
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::uint64_t Watchdog::begin(std::string what, CompletionProbe probe) {
  std::uint64_t ticket = 0;
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    // The thread already sleeps until an older deadline unless it has nothing to watch, or this
    // entry must be polled.
    wake = entries_.empty() || static_cast<bool>(probe);
    ticket = next_ticket_++;
    entries_.emplace(ticket, Entry{std::move(what), Clock::now(), std::move(probe)});
  }
  if (wake) wake_.notify_all();
  return ticket;
}

void Watchdog::end(std::uint64_t ticket) noexcept {
  std::lock_guard lock(mutex_);
  entries_.erase(ticket);
}

std::string Watchdog::timeout_message(const Entry& entry, Clock::time_point now) const {
  const double waited = std::chrono::duration<double>(now - entry.start).count();
  const double limit = std::chrono::duration<double>(timeout_).count();
  char seconds[96];
  std::snprintf(seconds, sizeof seconds, "%.1f s (timeout %.1f s)", waited, limit);
  return "tessera watchdog: " + where_ + " has waited " + seconds + " in collective " + entry.what +
         ", which has not completed: another rank did not make the matching call, is stuck, or "
         "died. Aborting the whole job instead of hanging. To find a diverging call run with "
         "TESSERA_DEBUG_COLLECTIVES=1; if the collective legitimately takes longer, raise "
         "TESSERA_COLLECTIVE_TIMEOUT (seconds).";
}

void Watchdog::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const Clock::time_point now = Clock::now();
    bool polling = false;
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.probe && it->second.probe()) {
        it = entries_.erase(it);
        continue;
      }
      polling = polling || static_cast<bool>(it->second.probe);
      ++it;
    }
    if (!entries_.empty()) {
      // std::map orders by ticket, and tickets grow with start time: the first entry is the oldest.
      const Entry& oldest = entries_.begin()->second;
      if (now - oldest.start >= timeout_) {
        const std::string message = timeout_message(oldest, now);
        entries_.clear();
        stop_ = true;
        lock.unlock();
        if (on_timeout_) {
          on_timeout_(message);
        } else {
          abort_job(message);
        }
        return;
      }
      Clock::duration sleep = oldest.start + timeout_ - now;
      if (polling && sleep > kPollInterval) sleep = kPollInterval;
      wake_.wait_for(lock, sleep);
    } else {
      wake_.wait(lock);
    }
  }
}

}  // namespace tessera
