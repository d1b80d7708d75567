// StreamFailure: the lowest failing position wins, events see only failures at or before their
// position, and "unsettled" tracks host functions still to run.
#include "tessera/runtime/stream_failure.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tessera {
namespace {

std::string message_of(const std::exception_ptr& error) {
  if (!error) return "(none)";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  }
}

TEST(StreamFailure, EventsSeeOnlyFailuresAtOrBeforeTheirPosition) {
  StreamFailure failure;
  const std::uint64_t first = failure.issue();
  const std::uint64_t before = failure.issued();  // an event recorded after the first host function
  const std::uint64_t second = failure.issue();
  const std::uint64_t after = failure.issued();
  EXPECT_EQ(first, 1u);
  EXPECT_EQ(second, 2u);
  EXPECT_TRUE(failure.unsettled_through(before)) << "host function 1 has not run";
  failure.done(first);
  EXPECT_FALSE(failure.unsettled_through(before));
  EXPECT_TRUE(failure.unsettled_through(after)) << "host function 2 has not run";
  failure.fail(second, std::make_exception_ptr(std::runtime_error("second threw")));
  failure.done(second);
  EXPECT_FALSE(failure.unsettled_through(after));
  EXPECT_EQ(message_of(failure.through(before)), "(none)") << "an event before the failure completes cleanly";
  EXPECT_EQ(message_of(failure.through(after)), "second threw");
  EXPECT_EQ(message_of(failure.first()), "second threw");
}

TEST(StreamFailure, KeepsTheFailureAtTheLowestPosition) {
  StreamFailure failure;
  const std::uint64_t a = failure.issue();
  const std::uint64_t b = failure.issue();
  failure.fail(b, std::make_exception_ptr(std::runtime_error("b")));
  failure.fail(a, std::make_exception_ptr(std::runtime_error("a")));
  failure.fail(b, std::make_exception_ptr(std::runtime_error("b again")));
  EXPECT_EQ(message_of(failure.first()), "a");
  EXPECT_EQ(message_of(failure.through(a)), "a");
  EXPECT_EQ(message_of(failure.through(0)), "(none)");
}

}  // namespace
}  // namespace tessera
