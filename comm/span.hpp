// Span / ConstSpan: an untyped view of `count` elements that a collective writes or reads.
// The element type is the DType passed beside the span. Which memory it points into depends on the
// communicator: host memory for the MPI backend, memory of the communicator's GPU for NCCL, none at
// all for the loopback backend (Communicator::memory_space() says which). The caller owns the memory and keeps it
// alive, untouched by anything else, until the collective's Work has completed.
#pragma once

#include <cstddef>
#include <ranges>
#include <type_traits>

namespace tessera {

struct Span {
  void* data = nullptr;
  std::size_t count = 0;  // elements of the collective's dtype

  Span() = default;
  Span(void* data_in, std::size_t count_in) : data(data_in), count(count_in) {}
  // Any contiguous range of mutable elements that outlives the call: an lvalue std::vector<float>,
  // std::array, or any std::span<std::uint16_t> (a view may be a temporary; a container may not).
  template <class R>
  requires std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
      (std::ranges::borrowed_range<R> || std::is_lvalue_reference_v<R>)&&(
          !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>)Span(R&& range)
      : data(std::ranges::data(range)), count(std::ranges::size(range)) {}  // NOLINT
};

struct ConstSpan {
  const void* data = nullptr;
  std::size_t count = 0;  // elements of the collective's dtype

  ConstSpan() = default;
  ConstSpan(const void* data_in, std::size_t count_in) : data(data_in), count(count_in) {}
  ConstSpan(Span span) : data(span.data), count(span.count) {}  // NOLINT: a Span is readable
  template <class R>
  requires std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
      (std::ranges::borrowed_range<R> || std::is_lvalue_reference_v<R>)ConstSpan(R&& range)
      : data(std::ranges::data(range)), count(std::ranges::size(range)) {}  // NOLINT
};

}  // namespace tessera
