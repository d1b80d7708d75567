// Numbers as settings are printed and stored as text: a floating value in the shortest form that
// reads back as the same value of its own type (0.001f -> "0.001", not "0.00100000005"; 2.0 -> "2"),
// std::to_chars without a precision.
#pragma once

#include <charconv>
#include <string>
#include <type_traits>

namespace tessera {

template <typename T>
requires std::is_floating_point_v<T>
std::string shortest_number_text(T value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

}  // namespace tessera
