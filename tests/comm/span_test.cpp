// Span / ConstSpan: built from pointers and from contiguous ranges, never from a temporary
// container (which would dangle before the collective ran), and Span never from const data.
#include "tessera/comm/span.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace tessera {
namespace {

static_assert(std::is_constructible_v<Span, std::vector<float>&>);
static_assert(!std::is_constructible_v<Span, std::vector<float>&&>, "a temporary vector would dangle");
static_assert(!std::is_constructible_v<Span, const std::vector<float>&>, "Span writes");
static_assert(std::is_constructible_v<Span, std::span<std::uint16_t>>, "a view may be a temporary");
static_assert(std::is_constructible_v<ConstSpan, const std::vector<float>&>);
static_assert(!std::is_constructible_v<ConstSpan, std::vector<float>&&>);
static_assert(std::is_constructible_v<ConstSpan, Span>);

TEST(Span, CountsElementsOfTheRange) {
  std::vector<float> v(7);
  const Span s(v);
  EXPECT_EQ(s.data, v.data());
  EXPECT_EQ(s.count, 7u);
  std::array<std::uint16_t, 5> a{};
  const ConstSpan c(a);
  EXPECT_EQ(c.data, a.data());
  EXPECT_EQ(c.count, 5u);
  const ConstSpan from_span = s;
  EXPECT_EQ(from_span.count, 7u);
  const Span raw(v.data() + 2, 3);
  EXPECT_EQ(raw.count, 3u);
}

}  // namespace
}  // namespace tessera
