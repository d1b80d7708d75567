// WorkerStream (the CPU copy stream): work runs in issue order on the stream's own thread, events
// complete when the worker reaches them, wait(event) holds the worker (not the caller), and a host
// function's failure fails later events and synchronize() while later work still runs.
#include "tessera/runtime/cpu/worker_stream.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/runtime/stream_gate.hpp"

namespace tessera {
namespace {

using test::Gate;

TEST(WorkerStream, RunsInIssueOrderOnItsOwnThread) {
  Gate gate;
  WorkerStream stream(StreamRole::kCopy);
  EXPECT_EQ(stream.role(), StreamRole::kCopy);
  std::vector<int> order;
  std::thread::id worker;
  stream.launch_host_function([&] {
    worker = std::this_thread::get_id();
    gate.wait();
  });
  for (int i = 0; i < 5; ++i) stream.launch_host_function([&order, i] { order.push_back(i); });
  const Event done = stream.record();
  EXPECT_FALSE(done.query()) << "the worker is held at the gate: the event cannot be complete";
  const Event copy_of_done = done;  // copies share one state
  gate.open();
  copy_of_done.synchronize();
  EXPECT_TRUE(done.query());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4})) << "host functions run in issue order";
  EXPECT_NE(worker, std::this_thread::get_id()) << "the work runs on the stream's own thread";
}

TEST(WorkerStream, WaitHoldsTheWorkerUntilAnotherStreamsEvent) {
  Gate gate;
  WorkerStream producer(StreamRole::kCopy), consumer(StreamRole::kCopy);
  std::atomic<int> stage{0};
  producer.launch_host_function([&] {
    gate.wait();
    stage = 1;
  });
  const Event produced = producer.record();
  consumer.wait(produced);  // returns at once: the worker waits, not the caller
  std::atomic<int> seen{-1};
  consumer.launch_host_function([&] { seen = stage.load(); });
  const Event consumed = consumer.record();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(consumed.query()) << "the consumer's work must wait for the producer's event";
  gate.open();
  consumed.synchronize();
  EXPECT_EQ(seen.load(), 1) << "work queued after wait(event) ran after the event";
}

TEST(WorkerStream, HostFunctionFailureFailsLaterEventsAndSynchronize) {
  WorkerStream stream(StreamRole::kCopy);
  const Event before = stream.record();
  stream.launch_host_function([] { throw std::runtime_error("staging buffer lost"); });
  std::atomic<int> later_work{0};
  stream.launch_host_function([&] { ++later_work; });
  const Event after = stream.record();
  EXPECT_NO_THROW(before.synchronize()) << "an event recorded before the failure completes normally";
  try {
    after.synchronize();
    ADD_FAILURE() << "expected the event recorded after the failure to rethrow it";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "staging buffer lost");
  }
  EXPECT_TRUE(after.query()) << "a failed event is complete";
  EXPECT_EQ(later_work.load(), 1) << "work queued after a failure still runs, in order";
  EXPECT_THROW(stream.synchronize(), std::runtime_error);
  EXPECT_THROW(stream.synchronize(), std::runtime_error) << "the failure stays with the stream";
}

TEST(WorkerStream, WaitingOnAFailedEventFailsTheStream) {
  WorkerStream source(StreamRole::kCopy), stream(StreamRole::kCopy);
  source.launch_host_function([] { throw std::runtime_error("upstream"); });
  stream.wait(source.record());
  EXPECT_THROW(stream.synchronize(), std::runtime_error);
}

TEST(WorkerStream, DestructorFinishesQueuedWork) {
  std::atomic<int> ran{0};
  {
    WorkerStream stream(StreamRole::kCopy);
    for (int i = 0; i < 100; ++i) stream.launch_host_function([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace tessera
