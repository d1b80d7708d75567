// Watchdog: a collective that does not complete within the timeout fires the handler once, with a
// message naming the rank and the collective; completed collectives never fire it; probes are polled.
#include "tessera/comm/watchdog.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

namespace tessera {
namespace {

using namespace std::chrono_literals;

struct Fired {
  std::mutex mutex;
  std::string message;
  int times = 0;
  Watchdog::TimeoutHandler handler() {
    return [this](const std::string& m) {
      std::lock_guard lock(mutex);
      message = m;
      ++times;
    };
  }
  int count() {
    std::lock_guard lock(mutex);
    return times;
  }
};

TEST(Watchdog, StuckCollectiveFiresOnceWithAMessage) {
  Fired fired;
  Watchdog watchdog(100ms, "rank 3/4 (host h)", fired.handler());
  watchdog.begin("#7 all_reduce(count=8, f32, sum) on communicator 'world'");
  while (fired.count() == 0) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(fired.count(), 1);
  EXPECT_NE(fired.message.find("rank 3/4 (host h)"), std::string::npos) << fired.message;
  EXPECT_NE(fired.message.find("#7 all_reduce(count=8, f32, sum)"), std::string::npos) << fired.message;
  EXPECT_NE(fired.message.find("TESSERA_COLLECTIVE_TIMEOUT"), std::string::npos) << fired.message;
}

TEST(Watchdog, CompletedCollectivesNeverFire) {
  Fired fired;
  {
    Watchdog watchdog(200ms, "rank 0/1 (host h)", fired.handler());
    for (int i = 0; i < 20; ++i) {
      std::string what = "barrier() number ";
      what += std::to_string(i);
      const auto ticket = watchdog.begin(what);
      std::this_thread::sleep_for(20ms);  // total 400 ms, each well inside the timeout
      watchdog.end(ticket);
    }
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_EQ(fired.count(), 0) << fired.message;
}

TEST(Watchdog, ProbedCollectiveEndsWhenTheProbeSaysSo) {
  Fired fired;
  std::atomic<bool> done{false};
  Watchdog watchdog(300ms, "rank 0/1 (host h)", fired.handler());
  watchdog.begin("#1 all_gather(count=4, bf16)", [&] { return done.load(); });
  std::this_thread::sleep_for(100ms);
  done = true;
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(fired.count(), 0) << fired.message;
  watchdog.begin("#2 all_gather(count=4, bf16)", [] { return false; });
  while (fired.count() == 0) std::this_thread::sleep_for(10ms);
  EXPECT_NE(fired.message.find("#2 all_gather"), std::string::npos) << fired.message;
}

TEST(Watchdog, DestroyingWithACollectiveInFlightDoesNotWait) {
  Fired fired;
  {
    Watchdog watchdog(std::chrono::minutes(10), "rank 0/1 (host h)", fired.handler());
    watchdog.begin("#1 barrier()");
  }
  EXPECT_EQ(fired.count(), 0);
}

}  // namespace
}  // namespace tessera
