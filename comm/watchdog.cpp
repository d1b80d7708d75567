// Watchdog: sleeps until the oldest watched collective's deadline (or the next probe poll), and
// fires the timeout handler once when a deadline passes. With nothing to watch it wakes once per
// timeout, so starting a collective never has to wake it (no context switch per collective).
#include "tessera/comm/watchdog.hpp"

#include <time.h>

#include <cstdio>
#include <utility>

#include "tessera/comm/job_abort.hpp"

namespace tessera {

Watchdog::Clock::time_point Watchdog::Clock::now() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

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
    // The thread wakes by this entry's deadline anyway: it sleeps until an older deadline, or (with
    // nothing to watch) for one timeout. Only an entry that must be polled needs it sooner.
    wake = static_cast<bool>(probe);
    ticket = next_ticket_++;
    entries_.emplace(ticket, Entry{std::move(what), {}, Clock::now(), std::move(probe)});
  }
  if (wake) wake_.notify_all();
  return ticket;
}

std::uint64_t Watchdog::begin_lazy(std::function<std::string()> describe) {
  const Clock::time_point start = Clock::now();
  std::lock_guard lock(mutex_);
  const std::uint64_t ticket = next_ticket_++;
  if (spare_.empty()) {
    entries_.emplace(ticket, Entry{{}, std::move(describe), start, {}});
  } else {
    spare_.key() = ticket;
    spare_.mapped().describe = std::move(describe);
    spare_.mapped().start = start;
    entries_.insert(std::move(spare_));
    spare_ = {};
  }
  return ticket;
}

void Watchdog::end(std::uint64_t ticket) noexcept {
  std::lock_guard lock(mutex_);
  auto node = entries_.extract(ticket);
  if (node.empty() || !spare_.empty() || !node.mapped().what.empty() || node.mapped().probe) return;
  node.mapped().describe = nullptr;  // drops what it refers to
  spare_ = std::move(node);
}

std::string Watchdog::timeout_message(const Entry& entry, Clock::time_point now) const {
  const double waited = std::chrono::duration<double>(now - entry.start).count();
  const double limit = std::chrono::duration<double>(timeout_).count();
  char seconds[96];
  std::snprintf(seconds, sizeof seconds, "%.1f s (timeout %.1f s)", waited, limit);
  const std::string what = entry.describe ? entry.describe() : entry.what;
  return "tessera watchdog: " + where_ + " has waited " + seconds + " in collective " + what +
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
      // The clock advances a tick at a time: sleeping less would only find it unchanged.
      if (sleep < std::chrono::milliseconds(1)) sleep = std::chrono::milliseconds(1);
      wake_.wait_for(lock, sleep);
    } else {
      // A collective that starts meanwhile is seen by its deadline: at most one timeout from now.
      wake_.wait_for(lock, timeout_);
    }
  }
}

}  // namespace tessera
