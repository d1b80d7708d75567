// InFlightQueue: the engine's asynchronous operations per unit — parameter gathers and gradient
// reductions today, state swaps later — in issue order, each kind bounded by a depth. Finishing an
// operation waits for its Work and then runs the kind's finisher (e.g. widen and bind the gathered
// parameters), always oldest first within a kind, so buffers are released in the order they were
// taken and at most `depth` transient buffers of a kind exist at once.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>

#include "tessera/core/work.hpp"

namespace tessera {

enum class InFlightKind { kGather, kReduce };
inline constexpr std::size_t kInFlightKinds = 2;

class InFlightQueue {
 public:
  using Finisher = std::function<void(int unit)>;

  // `depth`: how many operations of the kind may be in flight before push() finishes the oldest
  // (0: no bound). `finish`: what completing one of that kind means.
  void configure(InFlightKind kind, std::size_t depth, Finisher finish);

  // Records an issued operation, then finishes the oldest of its kind while more than `depth`
  // are in flight.
  void push(InFlightKind kind, int unit, Work work);
  std::size_t count(InFlightKind kind) const;
  // Finishes operations of `kind` oldest first, up to and including `unit`'s (no-op if absent).
  void finish_through(InFlightKind kind, int unit);
  void finish_oldest(InFlightKind kind);
  void finish_all(InFlightKind kind);

 private:
  struct Entry {
    int unit;
    Work work;
  };
  struct Lane {
    std::size_t depth = 0;
    Finisher finish;
    std::deque<Entry> entries;
  };
  Lane& lane(InFlightKind kind) { return lanes_[static_cast<std::size_t>(kind)]; }
  const Lane& lane(InFlightKind kind) const { return lanes_[static_cast<std::size_t>(kind)]; }

  Lane lanes_[kInFlightKinds];
};

}  // namespace tessera
