// Strict number parsing: whole text only, range-checked, errors name what was read and quote it.
#include "tessera/core/parse_number.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tessera {
namespace {

std::string error_of(auto&& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParseNumber, IntegersWholeAndInRange) {
  EXPECT_EQ(parse_integer("42", "x"), 42);
  EXPECT_EQ(parse_integer("-7", "x"), -7);
  EXPECT_EQ(parse_integer("+3", "x"), 3);
  EXPECT_EQ(try_parse_integer("9223372036854775807"), INT64_MAX);
  EXPECT_FALSE(try_parse_integer("99999999999999999999"));
  EXPECT_FALSE(try_parse_integer(""));
  EXPECT_FALSE(try_parse_integer("1,"));
  EXPECT_FALSE(try_parse_integer(" 1"));
  EXPECT_FALSE(try_parse_integer("1e3"));
  EXPECT_FALSE(try_parse_integer("5", 0, 4));
}

TEST(ParseNumber, IntegerErrorsNameWhatAndQuoteTheText) {
  EXPECT_EQ(error_of([] { parse_integer("99999999999999999999", "step directory 'step_9'"); }),
            "step directory 'step_9' = '99999999999999999999': out of range "
            "(-9223372036854775808 .. 9223372036854775807)");
  EXPECT_EQ(error_of([] { parse_integer("", "--tokens item 2"); }), "--tokens item 2 = '': not an integer");
  EXPECT_EQ(error_of([] { parse_integer("12", "--x", 0, 10); }), "--x = '12': out of range (0 .. 10)");
}

TEST(ParseNumber, HexAndFinite) {
  EXPECT_EQ(parse_hex_u64("ff", "h"), 255u);
  EXPECT_EQ(parse_hex_u64("ffffffffffffffff", "h"), UINT64_MAX);
  EXPECT_THROW(parse_hex_u64("1ffffffffffffffff", "h"), std::invalid_argument);
  EXPECT_THROW(parse_hex_u64("0xff", "h"), std::invalid_argument);
  EXPECT_DOUBLE_EQ(parse_finite("1e-3", "lr"), 1e-3);
  EXPECT_EQ(error_of([] { parse_finite("nan", "--temperature"); }), "--temperature = 'nan': must be finite");
  EXPECT_EQ(error_of([] { parse_finite("inf", "--temperature"); }), "--temperature = 'inf': must be finite");
  EXPECT_EQ(error_of([] { parse_finite("1e999", "p"); }), "p = '1e999': out of the range of a double");
  EXPECT_THROW(parse_finite("1.5x", "p"), std::invalid_argument);
  EXPECT_THROW(parse_finite("2", "p", 0, 1), std::invalid_argument);
}

TEST(ParseNumber, ExcerptIsShortAndPrintable) {
  const std::string long_text(100, 'a');
  EXPECT_EQ(quote_excerpt(long_text), "'" + std::string(40, 'a') + "...'");
  EXPECT_EQ(quote_excerpt(std::string("a\0b", 3)), "'a\\x00b'");
}

}  // namespace
}  // namespace tessera
