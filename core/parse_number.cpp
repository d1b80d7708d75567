// Strict number parsing with std::from_chars and errors that name what was read.
#include "tessera/core/parse_number.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <system_error>

namespace tessera {

namespace {

std::string range_text(std::int64_t min, std::int64_t max) {
  return "out of range (" + std::to_string(min) + " .. " + std::to_string(max) + ")";
}

[[noreturn]] void refuse(const std::string& what, std::string_view text, const std::string& problem) {
  throw std::invalid_argument(what + " = " + quote_excerpt(text) + ": " + problem);
}

}  // namespace

std::string quote_excerpt(std::string_view text) {
  constexpr std::size_t kMaxShown = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out + "'";
}

std::optional<std::int64_t> try_parse_integer(std::string_view text, std::int64_t min, std::int64_t max) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::int64_t parse_integer(std::string_view text, const std::string& what, std::int64_t min, std::int64_t max) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  const bool whole = !digits.empty() && end == digits.data() + digits.size();
  if (error == std::errc::result_out_of_range && whole) refuse(what, text, range_text(min, max));
  if (error != std::errc() || !whole) refuse(what, text, "not an integer");
  if (value < min || value > max) refuse(what, text, range_text(min, max));
  return value;
}

std::uint64_t parse_hex_u64(std::string_view text, const std::string& what) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  const bool whole = !text.empty() && end == text.data() + text.size();
  if (error != std::errc() || !whole) refuse(what, text, "not a 64-bit hexadecimal number");
  return value;
}

double parse_finite(std::string_view text, const std::string& what, double min, double max) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool whole = !text.empty() && end == text.data() + text.size();
  if (error == std::errc::result_out_of_range && whole) refuse(what, text, "out of the range of a double");
  if (error != std::errc() || !whole) refuse(what, text, "not a number");
  if (!std::isfinite(value)) refuse(what, text, "must be finite");
  if (value < min || value > max) {
    refuse(what, text, "out of range (" + std::to_string(min) + " .. " + std::to_string(max) + ")");
  }
  return value;
}

}  // namespace tessera
