// InFlightQueue: bounded lanes of issued operations, finished oldest first.
#include "tessera/sharding/in_flight_queue.hpp"

#include <algorithm>

namespace tessera {

void InFlightQueue::configure(InFlightKind kind, std::size_t depth, Finisher finish) {
  lane(kind).depth = depth;
  lane(kind).finish = std::move(finish);
}

void InFlightQueue::push(InFlightKind kind, int unit, Work work) {
  Lane& l = lane(kind);
  l.entries.push_back({unit, std::move(work)});
  while (l.depth > 0 && l.entries.size() > l.depth) finish_oldest(kind);
}

std::size_t InFlightQueue::count(InFlightKind kind) const { return lane(kind).entries.size(); }

void InFlightQueue::finish_oldest(InFlightKind kind) {
  Lane& l = lane(kind);
  Entry e = std::move(l.entries.front());
  l.entries.pop_front();
  e.work.wait();
  l.finish(e.unit);
}

void InFlightQueue::finish_through(InFlightKind kind, int unit) {
  Lane& l = lane(kind);
  const bool present = std::any_of(l.entries.begin(), l.entries.end(), [&](const Entry& e) { return e.unit == unit; });
  if (!present) return;
  for (;;) {
    const int oldest = l.entries.front().unit;
    finish_oldest(kind);
    if (oldest == unit) return;
  }
}

void InFlightQueue::finish_all(InFlightKind kind) {
  while (!lane(kind).entries.empty()) finish_oldest(kind);
}

}  // namespace tessera
