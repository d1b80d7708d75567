// SerialExecutor: tasks run one at a time on one thread, in posting order; destroying the executor
// calls `cancel` of every task that has not started (never `run`), after finishing the running one.
#include "tessera/core/serial_executor.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tessera {
namespace {

using namespace std::chrono_literals;

TEST(SerialExecutor, RunsTasksInPostingOrderOnOneThread) {
  constexpr int kTasks = 200;
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  std::promise<void> all_done;
  {
    detail::SerialExecutor executor;
    for (int i = 0; i < kTasks; ++i) {
      executor.post(
          [&, i] {
            order.push_back(i);  // only the executor thread touches these
            threads.push_back(std::this_thread::get_id());
            if (i == kTasks - 1) all_done.set_value();
          },
          [] {});
    }
    all_done.get_future().wait();
  }
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(order[i], i) << "position " << i;
  for (const auto& id : threads) EXPECT_EQ(id, threads.front());
  EXPECT_NE(threads.front(), std::this_thread::get_id());
}

TEST(SerialExecutor, AThrowingTaskDoesNotStopTheOnesAfterIt) {
  std::promise<void> second_ran;
  detail::SerialExecutor executor;
  executor.post([] { throw std::runtime_error("task failed"); }, [] {});
  executor.post([&] { second_ran.set_value(); }, [] {});
  EXPECT_EQ(second_ran.get_future().wait_for(10s), std::future_status::ready);
}

TEST(SerialExecutor, DestructionCancelsUnstartedTasksAndFinishesTheRunningOne) {
  std::promise<void> first_started;
  std::atomic<bool> release{false};
  std::atomic<bool> first_finished{false};
  std::mutex mutex;
  std::vector<int> ran, cancelled;
  std::thread releaser;
  {
    detail::SerialExecutor executor;
    executor.post(
        [&] {
          first_started.set_value();
          while (!release.load()) std::this_thread::sleep_for(1ms);
          first_finished.store(true);
        },
        [&] { cancelled.push_back(0); });
    for (int i = 1; i <= 3; ++i) {
      executor.post(
          [&, i] {
            std::lock_guard lock(mutex);
            ran.push_back(i);
          },
          [&, i] {
            std::lock_guard lock(mutex);
            cancelled.push_back(i);
          });
    }
    first_started.get_future().wait();
    releaser = std::thread([&] {
      std::this_thread::sleep_for(50ms);
      release.store(true);
    });
  }  // the destructor cancels tasks 1-3 and waits for task 0
  releaser.join();
  EXPECT_TRUE(first_finished.load()) << "the destructor returned before the running task finished";
  EXPECT_TRUE(ran.empty()) << "expected no queued task to run, " << ran.size() << " ran";
  EXPECT_EQ(cancelled, (std::vector<int>{1, 2, 3}));
}

}  // namespace
}  // namespace tessera
