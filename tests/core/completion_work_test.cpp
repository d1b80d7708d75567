// CompletionWork: completed or failed by another thread; wait() blocks until then, rethrows the
// failure on every wait, and is_completed() turns true exactly when the other thread has finished.
#include "tessera/core/completion_work.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

namespace tessera {
namespace {

using namespace std::chrono_literals;

TEST(CompletionWork, CompletedFromAnotherThreadReleasesTheWaiter) {
  auto state = std::make_shared<detail::CompletionWork>();
  Work work(state);
  std::atomic<bool> finished{false};
  EXPECT_FALSE(work.is_completed());
  std::thread producer([&] {
    std::this_thread::sleep_for(50ms);
    finished.store(true);
    state->complete();
  });
  work.wait();
  EXPECT_TRUE(finished.load()) << "wait() returned before the other thread completed the work";
  EXPECT_TRUE(work.is_completed());
  work.wait();  // waiting twice is fine
  producer.join();
}

TEST(CompletionWork, FailedFromAnotherThreadRethrowsOnEveryWait) {
  auto state = std::make_shared<detail::CompletionWork>();
  Work work(state);
  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    state->fail(std::make_exception_ptr(std::runtime_error("disk full")));
  });
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string caught;
    try {
      work.wait();
    } catch (const std::runtime_error& error) {
      caught = error.what();
    }
    EXPECT_EQ(caught, "disk full") << "wait number " << attempt + 1;
  }
  EXPECT_TRUE(work.is_completed());
  producer.join();
}

TEST(CompletionWork, ManyWaitersAreAllReleased) {
  auto state = std::make_shared<detail::CompletionWork>();
  Work work(state);
  std::atomic<int> released{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&] {
      work.wait();
      ++released;
    });
  }
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(released.load(), 0);
  state->complete();
  for (std::thread& waiter : waiters) waiter.join();
  EXPECT_EQ(released.load(), 4);
}

}  // namespace
}  // namespace tessera
