// Strict text -> number: the whole text is one number inside the given range, or an error that
// names what was being read (a flag, a file's field, a path) and quotes a short excerpt of the text.
// Never std::stoll's bare "stoll" message, never a silent wrap-around or a partially read number.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

// The decimal integer `text` ("-12", "+3"; no spaces, no trailing characters) when it lies in
// [min, max]; nullopt otherwise.
std::optional<std::int64_t> try_parse_integer(std::string_view text,
                                              std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                              std::int64_t max = std::numeric_limits<std::int64_t>::max());

// As try_parse_integer, throwing std::invalid_argument "WHAT = 'TEXT': not an integer" or
// "...: out of range (MIN .. MAX)" when it is not one.
std::int64_t parse_integer(std::string_view text, const std::string& what,
                           std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                           std::int64_t max = std::numeric_limits<std::int64_t>::max());

// An unsigned hexadecimal integer (no prefix) that fits 64 bits.
std::uint64_t parse_hex_u64(std::string_view text, const std::string& what);

// A finite decimal number ("1e-3", "0.5"), throwing when it is not one, is nan/inf, or lies
// outside [min, max].
double parse_finite(std::string_view text, const std::string& what,
                    double min = -std::numeric_limits<double>::max(),
                    double max = std::numeric_limits<double>::max());

// `text` quoted for an error message: at most 40 characters (then "..."), control bytes as \xNN.
std::string quote_excerpt(std::string_view text);

}  // namespace tessera
