// MpiCounters: what an MPI communicator has done on this rank since it was made, counted for tests
// and benchmarks — e.g. that a matching all_reduce costs no message beyond its data, or how often a
// collective ran on the thread that waited for it instead of on the progress thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera {

struct MpiCounters {
  std::uint64_t collectives = 0;     // collectives run (completed or failed)
  std::uint64_t messages_sent = 0;   // point-to-point messages posted: data and call checks
  std::uint64_t call_exchanges = 0;  // exchanges made only to compare calls: the first step of
                                     // broadcast, barrier and split, and naming the calls after a
                                     // mismatch (the data collectives check for free)
  std::uint64_t run_by_waiter = 0;   // collectives run by a thread in Work::wait() rather than by the
                                     // progress thread
};

namespace detail {

// The live counters: bumped by whichever thread runs collectives — one thread at a time, handed
// over under the queue's mutex — and read by any thread. A single writer needs no atomic
// read-modify-write (a locked instruction on every message), only atomic loads and stores.
struct LiveMpiCounters {
  std::atomic<std::uint64_t> collectives{0};
  std::atomic<std::uint64_t> messages_sent{0};
  std::atomic<std::uint64_t> call_exchanges{0};
  std::atomic<std::uint64_t> run_by_waiter{0};

  static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  MpiCounters snapshot() const {
    return {collectives.load(std::memory_order_relaxed), messages_sent.load(std::memory_order_relaxed),
            call_exchanges.load(std::memory_order_relaxed), run_by_waiter.load(std::memory_order_relaxed)};
  }
};

}  // namespace detail
}  // namespace tessera
