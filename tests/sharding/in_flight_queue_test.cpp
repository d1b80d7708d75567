// InFlightQueue: a lane's depth bounds what is in flight (the oldest is finished first), finishing
// through a unit finishes everything issued before it in order, lanes are independent, and an
// operation's error reaches the caller.
#include "tessera/sharding/in_flight_queue.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "tessera/core/completion_work.hpp"

namespace tessera {
namespace {

Work done() { return Work(); }

TEST(InFlightQueue, DepthFinishesTheOldest) {
  InFlightQueue q;
  std::vector<int> finished;
  q.configure(InFlightKind::kReduce, 2, [&](int u) { finished.push_back(u); });
  q.push(InFlightKind::kReduce, 7, done());
  q.push(InFlightKind::kReduce, 3, done());
  EXPECT_TRUE(finished.empty());
  q.push(InFlightKind::kReduce, 5, done());
  EXPECT_EQ(finished, std::vector<int>{7});
  EXPECT_EQ(q.count(InFlightKind::kReduce), 2u);
  q.finish_all(InFlightKind::kReduce);
  EXPECT_EQ(finished, (std::vector<int>{7, 3, 5}));
}

TEST(InFlightQueue, FinishThroughKeepsIssueOrderAndLanesApart) {
  InFlightQueue q;
  std::vector<int> gathers, reduces;
  q.configure(InFlightKind::kGather, 0, [&](int u) { gathers.push_back(u); });
  q.configure(InFlightKind::kReduce, 0, [&](int u) { reduces.push_back(u); });
  for (int u : {4, 1, 9}) q.push(InFlightKind::kGather, u, done());
  q.push(InFlightKind::kReduce, 2, done());
  q.finish_through(InFlightKind::kGather, 1);
  EXPECT_EQ(gathers, (std::vector<int>{4, 1}));
  EXPECT_TRUE(reduces.empty());
  q.finish_through(InFlightKind::kGather, 42);  // not in flight: nothing happens
  EXPECT_EQ(q.count(InFlightKind::kGather), 1u);
}

TEST(InFlightQueue, AnOperationsErrorReachesTheCaller) {
  InFlightQueue q;
  int finished = 0;
  q.configure(InFlightKind::kGather, 0, [&](int) { ++finished; });
  auto failing = std::make_shared<detail::CompletionWork>();
  failing->fail(std::make_exception_ptr(std::runtime_error("peer gone")));
  q.push(InFlightKind::kGather, 0, Work(failing));
  EXPECT_THROW(q.finish_oldest(InFlightKind::kGather), std::runtime_error);
  EXPECT_EQ(finished, 0) << "a failed gather must not be finished as if it had data";
}

}  // namespace
}  // namespace tessera
