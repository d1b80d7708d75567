// InlineStream (the CPU compute and communication streams, every meta stream): work runs when issued,
// events are complete when recorded, wait(event) blocks the caller, and a failing host function does
// not throw to its caller but fails later events and synchronize(). Also the Event handle itself.
#include "tessera/runtime/inline_stream.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <thread>

#include "tessera/runtime/cpu/worker_stream.hpp"
#include "tests/runtime/stream_gate.hpp"

namespace tessera {
namespace {

using test::Gate;

TEST(Event, DefaultConstructedIsComplete) {
  const Event e;
  EXPECT_TRUE(e.query());
  EXPECT_NO_THROW(e.synchronize());
  EXPECT_EQ(e.state(), nullptr);
}

TEST(Event, FailedEventIsCompleteAndRethrows) {
  const Event e = failed_event(std::make_exception_ptr(std::runtime_error("lost")));
  EXPECT_TRUE(e.query());
  EXPECT_THROW(e.synchronize(), std::runtime_error);
}

TEST(InlineStream, RunsWorkWhenIssued) {
  InlineStream stream(StreamRole::kCompute);
  EXPECT_EQ(stream.role(), StreamRole::kCompute);
  int ran = 0;
  stream.launch_host_function([&] { ++ran; });
  EXPECT_EQ(ran, 1) << "the host function ran before launch_host_function returned";
  EXPECT_TRUE(stream.record().query()) << "events are complete when recorded";
  EXPECT_NO_THROW(stream.synchronize());
}

TEST(InlineStream, WaitBlocksTheCallerUntilTheEventCompletes) {
  Gate gate;
  WorkerStream producer(StreamRole::kCopy);
  InlineStream stream(StreamRole::kCompute);
  std::atomic<bool> opened{false};
  producer.launch_host_function([&] { gate.wait(); });
  const Event e = producer.record();
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    opened = true;
    gate.open();
  });
  stream.wait(e);
  EXPECT_TRUE(opened.load()) << "wait returned before the event could complete";
  EXPECT_TRUE(e.query());
  opener.join();
}

TEST(InlineStream, HostFunctionFailureSurfacesInSynchronize) {
  InlineStream stream(StreamRole::kCommunication);
  const Event before = stream.record();
  EXPECT_NO_THROW(stream.launch_host_function([] { throw std::runtime_error("boom"); }))
      << "a failing host function does not throw to its caller";
  EXPECT_NO_THROW(before.synchronize()) << "an event recorded before the failure";
  EXPECT_THROW(stream.record().synchronize(), std::runtime_error);
  EXPECT_THROW(stream.synchronize(), std::runtime_error);
  EXPECT_THROW(stream.synchronize(), std::runtime_error) << "the failure stays with the stream";
}

}  // namespace
}  // namespace tessera
