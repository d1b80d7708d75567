// ShardSnapshot: this rank's share of the model state at a step boundary, as host f32 arrays per
// unit — the shard range [shard_begin, shard_begin + shard_numel) of the master weights and Adam
// moments. Stage 0 keeps the whole buffer on every rank; only the rank's shard range is taken, so
// every stage writes the same layout (no N copies).
//
// Two ways to take it:
//  * view  — pointers straight into the engine's tensors (CPU device): no copy, valid only until the
//            engine changes them (the next step). For synchronous saves.
//  * copy  — into HostStagingBuffers owned by the caller (reused across saves), so training may go
//            on while a background thread writes. The buffers report their bytes to the CPU
//            device's MemoryTracker as comm buffers ("checkpoint host copies").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

class MemoryTracker;
class ShardedEngine;

struct UnitShardData {
  std::string unit;
  std::int64_t unit_numel = 0;   // elements of the unit's flat buffer (unpadded)
  std::int64_t shard_numel = 0;  // elements in this shard
  std::int64_t offset = 0;       // first element of this shard in the unit's (padded) flat buffer
  const float* master = nullptr;      // (shard_numel) f32, host
  const float* exp_avg = nullptr;     // (shard_numel) f32, host
  const float* exp_avg_sq = nullptr;  // (shard_numel) f32, host
};

// Host f32 memory for snapshots, reported to `tracker` (may be null) while allocated.
class HostStagingBuffer {
 public:
  explicit HostStagingBuffer(MemoryTracker* tracker) : tracker_(tracker) {}
  ~HostStagingBuffer();
  HostStagingBuffer(const HostStagingBuffer&) = delete;
  HostStagingBuffer& operator=(const HostStagingBuffer&) = delete;

  // Grows to at least `elements` (contents lost on growth) and touches every page, so later copies
  // into it do not pay page faults.
  void reserve(std::int64_t elements);
  float* data() { return data_.get(); }
  std::int64_t bytes() const { return capacity_ * static_cast<std::int64_t>(sizeof(float)); }

 private:
  MemoryTracker* tracker_;
  std::unique_ptr<float[]> data_;
  std::int64_t capacity_ = 0;
};

struct ShardSnapshot {
  std::vector<UnitShardData> units;
  std::int64_t bytes() const;  // f32 bytes of master + m + v over all units

  // Elements a copy of `engine`'s shard needs in a staging buffer.
  static std::int64_t elements_needed(const ShardedEngine& engine);
  // Views into the engine's tensors; requires a CPU device (throws std::logic_error otherwise).
  static ShardSnapshot view(const ShardedEngine& engine);
  // Copies into `buffer` (reserved as needed); waits for the device.
  static ShardSnapshot copy(const ShardedEngine& engine, HostStagingBuffer& buffer);
};

// The tracker host staging memory reports to: the engine's device tracker when it is a CPU device
// (host memory), else nullptr.
MemoryTracker* host_memory_tracker(const ShardedEngine& engine);

}  // namespace tessera
