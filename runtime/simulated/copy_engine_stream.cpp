// CopyEngineStream: a WorkerStream behind a gate that opens as far as its events are asked for.
#include "tessera/runtime/simulated/copy_engine_stream.hpp"

#include <limits>
#include <memory>

namespace tessera {
namespace {

// An event of the copy engine: waiting for it opens the gate through its item first.
class DemandedEvent final : public detail::WorkState {
 public:
  DemandedEvent(CopyEngineStream& stream, std::uint64_t item, Event inner)
      : stream_(stream), item_(item), inner_(std::move(inner)) {}
  void wait() override {
    // A completed event may outlive its stream (which runs everything before it goes).
    if (!inner_.query()) stream_.release_through(item_);
    inner_.synchronize();
  }
  bool is_completed() override { return inner_.query(); }

 private:
  CopyEngineStream& stream_;
  std::uint64_t item_;
  Event inner_;
};

}  // namespace

CopyEngineStream::~CopyEngineStream() { release_through(std::numeric_limits<std::uint64_t>::max()); }

void CopyEngineStream::release_through(std::uint64_t item) {
  {
    std::lock_guard lock(mutex_);
    if (item <= released_) return;
    released_ = item;
  }
  released_cv_.notify_all();
}

void CopyEngineStream::await_release(std::uint64_t item) {
  std::unique_lock lock(mutex_);
  released_cv_.wait(lock, [&] { return released_ >= item; });
}

std::uint64_t CopyEngineStream::post(std::function<void()> fn) {
  std::uint64_t item = 0;
  {
    std::lock_guard lock(mutex_);
    item = ++issued_;
  }
  worker_.launch_host_function([this, item, fn = std::move(fn)] {
    await_release(item);
    if (fn) fn();
  });
  return item;
}

Event CopyEngineStream::record() {
  const std::uint64_t item = post({});  // the gate's place of this event
  return Event(std::make_shared<DemandedEvent>(*this, item, worker_.record()));
}

void CopyEngineStream::wait(const Event& event) {
  if (!event.state()) return;
  post({});
  worker_.wait(event);
}

void CopyEngineStream::launch_host_function(std::function<void()> fn) { post(std::move(fn)); }

void CopyEngineStream::synchronize() { record().synchronize(); }

}  // namespace tessera
