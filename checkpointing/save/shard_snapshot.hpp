// Shard snapshots: this rank's share of the model state at a step boundary, as host arrays per
// unit and state tensor — the shard range [shard_begin, shard_begin + shard_numel) of every tensor
// the engine declares (the f32 master, then the optimizer's state, each in its own dtype). Stage 0
// keeps whole buffers on every rank; only the rank's shard range is taken, so every stage writes
// the same layout (no N copies).
//
// Two ways to take it:
//  * view  — pointers straight into the engine's tensors (a device whose memory is host memory,
//            nothing in an NVMe store): no copy, valid only until the engine changes them (the
//            next step). For synchronous saves.
//  * copy  — into a HostStagingBuffer owned by the caller (reused across saves), so training may
//            go on while a background thread writes. For a host device the buffer reports its
//            bytes to a host MemoryTracker as comm buffers ("checkpoint host copies"); for a GPU
//            it is the device's pinned memory, filled by asynchronous copies on the device's copy
//            stream (one wait at the end, not a synchronous pageable copy per tensor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/precision/dtype.hpp"

namespace tessera {

class Device;
class MemoryTracker;
class ShardedEngine;
class Storage;

// One state tensor's shard: (shard_numel / elements_per_value) values of `dtype` in host memory.
struct StateShard {
  std::string name;  // "master", "exp_avg", ...
  DType dtype = DType::kF32;
  std::int64_t elements_per_value = 1;
  const void* data = nullptr;

  std::int64_t values(std::int64_t shard_numel) const { return shard_numel / elements_per_value; }
};

struct UnitShardData {
  std::string unit;
  std::int64_t unit_numel = 0;   // elements of the unit's flat buffer (unpadded)
  std::int64_t shard_numel = 0;  // elements in this shard
  std::int64_t offset = 0;       // first element of this shard in the unit's (padded) flat buffer
  std::vector<StateShard> states;
};

// Host memory for snapshots.
class HostStagingBuffer {
 public:
  // Pageable memory, every page touched once, reported to `tracker` (may be null) while allocated.
  explicit HostStagingBuffer(MemoryTracker* tracker) : tracker_(tracker) {}
  // Pinned memory of `device` (a GPU's), counted by its pinned-host tracker as comm buffers.
  explicit HostStagingBuffer(Device& device) : pinned_from_(&device) {}
  ~HostStagingBuffer();
  HostStagingBuffer(const HostStagingBuffer&) = delete;
  HostStagingBuffer& operator=(const HostStagingBuffer&) = delete;

  // Grows to at least `bytes` (contents lost on growth); pageable memory is touched page by page,
  // so later copies into it do not pay page faults.
  void reserve(std::int64_t bytes);
  std::byte* data();
  std::int64_t bytes() const { return capacity_; }
  bool pinned() const { return pinned_from_ != nullptr; }

 private:
  MemoryTracker* tracker_ = nullptr;
  Device* pinned_from_ = nullptr;
  std::unique_ptr<std::byte[]> data_;
  std::shared_ptr<Storage> pinned_;
  std::int64_t capacity_ = 0;
};

struct ShardSnapshot {
  std::vector<UnitShardData> units;
  std::int64_t bytes() const;  // over all units and states

  // Bytes a copy of `engine`'s shard needs in a staging buffer.
  static std::int64_t bytes_needed(const ShardedEngine& engine);
  // Views into the engine's tensors; requires can_view (throws std::logic_error).
  static ShardSnapshot view(const ShardedEngine& engine);
  // True when every state tensor is in host memory (a host device, no NVMe offload).
  static bool can_view(const ShardedEngine& engine);
  // Copies into `buffer` (reserved as needed), reading NVMe-offloaded state from its file; waits
  // for the device. A GPU's tensors go to a pinned buffer through the copy stream, after the work
  // queued on the compute stream so far.
  static ShardSnapshot copy(ShardedEngine& engine, HostStagingBuffer& buffer);
};

// The tracker host staging memory reports to: the engine's device tracker when its memory is host
// memory, else nullptr.
MemoryTracker* host_memory_tracker(ShardedEngine& engine);

// The staging buffer for `engine`'s snapshots: the device's pinned memory on a GPU, else pageable
// memory reported to `host_tracker` (may be null).
std::unique_ptr<HostStagingBuffer> make_staging_buffer(ShardedEngine& engine, MemoryTracker* host_tracker);

}  // namespace tessera
