// Work and wait_all: a default Work is already completed; wait_all waits for every handle, even
// after one has failed, and then rethrows the first error in handle order.
#include "tessera/core/work.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {
namespace {

// A Work state that records whether it was waited and fails with `error` when it is not empty.
class RecordingState final : public detail::WorkState {
 public:
  explicit RecordingState(std::string error = {}) : error_(std::move(error)) {}
  void wait() override {
    ++waits;
    if (!error_.empty()) throw std::runtime_error(error_);
  }
  bool is_completed() override { return true; }
  int waits = 0;

 private:
  std::string error_;
};

TEST(Work, DefaultIsCompletedAndWaitsAtOnce) {
  Work nothing;
  EXPECT_TRUE(nothing.is_completed());
  nothing.wait();
  nothing.wait();
}

TEST(Work, CopiesShareOneState) {
  auto state = std::make_shared<RecordingState>();
  Work a(state);
  Work b = a;
  a.wait();
  b.wait();
  EXPECT_EQ(state->waits, 2);
}

TEST(WaitAll, WaitsEveryHandleAndRethrowsTheFirstError) {
  std::vector<std::shared_ptr<RecordingState>> states = {
      std::make_shared<RecordingState>(), std::make_shared<RecordingState>("second failed"),
      std::make_shared<RecordingState>(), std::make_shared<RecordingState>("fourth failed"),
      std::make_shared<RecordingState>()};
  std::vector<Work> works;
  for (const auto& state : states) works.emplace_back(state);
  std::string caught;
  try {
    wait_all(works);
  } catch (const std::runtime_error& error) {
    caught = error.what();
  }
  EXPECT_EQ(caught, "second failed") << "expected the first error in handle order";
  for (std::size_t i = 0; i < states.size(); ++i) {
    EXPECT_EQ(states[i]->waits, 1) << "handle " << i << " was waited " << states[i]->waits << " times, expected 1";
  }
}

TEST(WaitAll, EmptyAndAllSucceedingReturnNormally) {
  wait_all({});
  std::vector<Work> works(3);
  works.emplace_back(std::make_shared<RecordingState>());
  wait_all(works);
}

}  // namespace
}  // namespace tessera
