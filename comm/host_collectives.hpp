// Host collectives: small host values (a count, a struct, a string, a double) exchanged over any
// host-memory communicator, without packing them into i32 words by hand at every call site. The
// bytes travel as i32 words (padded), so the exchange is exact and every rank gets the same bits.
//
// Every function is collective and blocking: every rank of `comm` calls it at the same point, with
// the same T and root (and, for spans, the same count). They work on host values, so they throw
// std::invalid_argument naming the communicator when comm.memory_space() is MemorySpace::kGpu (an
// NCCL communicator; use the MPI world instead). On a loopback communicator (kMeta, no peers) the
// other ranks' values are unknown and simply stay value-initialised: all_gather_values returns
// this rank's value in its own slot and T{} elsewhere, broadcast_value returns T{} on a rank other
// than the root, broadcast_string "".
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/comm/communicator.hpp"

namespace tessera {

namespace detail {

// Throws std::invalid_argument when `comm` works on GPU memory; `function` names the caller.
void require_host_communicator(const Communicator& comm, const char* function);

// `all` holds comm.size() slots of `bytes` bytes; slot rank() holds this rank's bytes. Afterwards
// slot r holds rank r's bytes (slots the communicator does not write keep their contents).
void all_gather_slots(Communicator& comm, std::byte* all, std::size_t bytes);

// `data` (bytes) of rank `root` lands in `data` of every rank.
void broadcast_bytes(Communicator& comm, std::byte* data, std::size_t bytes, int root);

template <class T>
inline constexpr bool kIsSpan = false;
template <class T, std::size_t N>
inline constexpr bool kIsSpan<std::span<T, N>> = true;

template <class T>
constexpr void require_host_value_type() {
  static_assert(std::is_trivially_copyable_v<T>, "host collectives exchange T as bytes: T must be trivially copyable");
  static_assert(std::is_default_constructible_v<T>,
                "host collectives value-initialise T: T needs a default constructor");
  static_assert(!std::is_same_v<T, bool>, "std::vector<bool> has no data(): exchange std::uint8_t instead of bool");
  static_assert(!kIsSpan<T>, "a span is exchanged by its elements: pass std::span<const T>, not a span of mutable T");
}

}  // namespace detail

// values.size() elements per rank: returns comm.size() * values.size() elements, rank r's values at
// [r * values.size(), (r + 1) * values.size()).
template <class T>
std::vector<T> all_gather_values(Communicator& comm, std::span<const T> values) {
  detail::require_host_value_type<T>();
  detail::require_host_communicator(comm, "all_gather_values");
  const std::size_t n = values.size();
  std::vector<T> all(static_cast<std::size_t>(comm.size()) * n);
  std::copy(values.begin(), values.end(), all.begin() + static_cast<std::ptrdiff_t>(comm.rank() * n));
  detail::all_gather_slots(comm, reinterpret_cast<std::byte*>(all.data()), n * sizeof(T));
  return all;
}

// Every rank's value, in rank order.
template <class T>
std::vector<T> all_gather_values(Communicator& comm, const T& value) {
  return all_gather_values(comm, std::span<const T>(&value, 1));
}

// Rank `root`'s value on every rank (`value` is ignored elsewhere).
template <class T>
T broadcast_value(Communicator& comm, const T& value, int root) {
  detail::require_host_value_type<T>();
  detail::require_host_communicator(comm, "broadcast_value");
  T result{};
  if (comm.rank() == root) result = value;
  detail::broadcast_bytes(comm, reinterpret_cast<std::byte*>(&result), sizeof(T), root);
  return result;
}

// Rank `root`'s text on every rank, any length (empty included).
std::string broadcast_string(Communicator& comm, const std::string& text, int root);

// Every rank's text, in rank order, any lengths.
std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& text);

// One double per rank, all-gathered and added left to right in rank order starting from 0.0
// (((0 + x_0) + x_1) + ... + x_{N-1}), so every rank gets the same bits, run after run, whatever the
// transport's own reduction order.
double sum_in_rank_order(Communicator& comm, double local);

}  // namespace tessera
