// Shard snapshots: views into host tensors, or copies into tracked host buffers.
#include "tessera/checkpointing/save/shard_snapshot.hpp"

#include <stdexcept>

#include "tessera/runtime/device.hpp"
#include "tessera/runtime/memory_tracker.hpp"
#include "tessera/runtime/storage.hpp"
#include "tessera/runtime/stream.hpp"
#include "tessera/sharding/sharded_engine.hpp"

namespace tessera {
namespace {

// This rank's shard range inside a state tensor that covers the unit's optimizer range.
const std::byte* shard_pointer(const FlatParamUnit& unit, const StateTensor& t) {
  const std::int64_t skip = (unit.layout().shard_begin() - unit.optimizer_range().begin) / t.elements_per_value;
  return static_cast<const std::byte*>(t.tensor.data()) + static_cast<std::size_t>(skip) * dtype_size(t.tensor.dtype());
}

UnitShardData describe_unit(const FlatParamUnit& unit) {
  const FlatLayout& l = unit.layout();
  return {unit.name(), l.numel(), l.shard_numel(), l.shard_begin(), {}};
}

}  // namespace

HostStagingBuffer::~HostStagingBuffer() {
  if (tracker_ != nullptr && capacity_ > 0)
    tracker_->on_free(MemoryCategory::kCommBuffers, static_cast<std::size_t>(capacity_));
}

std::byte* HostStagingBuffer::data() {
  return pinned_ ? static_cast<std::byte*>(pinned_->data()) : data_.get();
}

void HostStagingBuffer::reserve(std::int64_t bytes) {
  if (bytes <= capacity_) return;
  if (pinned_from_ != nullptr) {
    pinned_.reset();  // the old block goes back before the larger one is taken
    pinned_ = Storage::allocate(*pinned_from_, static_cast<std::size_t>(bytes), MemoryCategory::kCommBuffers,
                                MemoryKind::kPinnedHost);
    capacity_ = bytes;
    return;
  }
  if (tracker_ != nullptr && capacity_ > 0)
    tracker_->on_free(MemoryCategory::kCommBuffers, static_cast<std::size_t>(capacity_));
  data_.reset();
  capacity_ = 0;
  data_.reset(new std::byte[static_cast<std::size_t>(bytes)]);
  capacity_ = bytes;
  std::byte* p = data_.get();
  constexpr std::int64_t kPage = 4096;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < bytes; i += kPage) p[i] = std::byte{0};
  if (tracker_ != nullptr) tracker_->on_allocate(MemoryCategory::kCommBuffers, static_cast<std::size_t>(capacity_));
}

std::int64_t ShardSnapshot::bytes() const {
  std::int64_t n = 0;
  for (const UnitShardData& u : units) {
    for (const StateShard& s : u.states) n += s.values(u.shard_numel) * static_cast<std::int64_t>(dtype_size(s.dtype));
  }
  return n;
}

std::int64_t ShardSnapshot::bytes_needed(const ShardedEngine& engine) {
  std::int64_t n = 0;
  for (const auto& unit : engine.units()) {
    for (const StateSpec& s : engine.state_specs()) {
      n += static_cast<std::int64_t>(dtype_size(s.dtype)) * (unit->layout().shard_numel() / s.elements_per_value);
    }
  }
  return n;
}

ShardSnapshot ShardSnapshot::view(const ShardedEngine& engine) {
  ShardSnapshot snap;
  for (const auto& unit : engine.units()) {
    UnitShardData data = describe_unit(*unit);
    for (const StateTensor& t : unit->state()) {
      if (!t.tensor.defined() || t.tensor.device().memory_space() != MemorySpace::kHost) {
        throw std::logic_error("ShardSnapshot::view needs state in host memory; use ShardSnapshot::copy");
      }
      data.states.push_back({t.name, t.tensor.dtype(), t.elements_per_value, shard_pointer(*unit, t)});
    }
    snap.units.push_back(std::move(data));
  }
  return snap;
}

ShardSnapshot ShardSnapshot::copy(ShardedEngine& engine, HostStagingBuffer& buffer) {
  Device& device = engine.device();
  buffer.reserve(bytes_needed(engine));
  // A GPU's tensors travel on the copy stream, after the compute stream's work so far; anything else
  // (a host device's, the NVMe store's) is read once the device is idle.
  const bool on_copy_stream = device.memory_space() == MemorySpace::kGpu && buffer.pinned();
  Stream* copy_stream = on_copy_stream ? &device.stream(StreamRole::kCopy) : nullptr;
  if (copy_stream != nullptr) copy_stream->wait(device.stream(StreamRole::kCompute).record());
  bool idle = false;
  ShardSnapshot snap;
  std::byte* out = buffer.data();
  for (const auto& unit : engine.units()) {
    UnitShardData data = describe_unit(*unit);
    const std::int64_t skip = unit->layout().shard_begin() - unit->optimizer_range().begin;
    const std::vector<StateTensor> state = unit->state();
    for (std::size_t k = 0; k < state.size(); ++k) {
      const StateTensor& t = state[k];
      const DType dtype = engine.state_specs()[k].dtype;
      const std::int64_t values = data.shard_numel / t.elements_per_value;
      const std::size_t bytes = static_cast<std::size_t>(values) * dtype_size(dtype);
      if (copy_stream != nullptr && t.tensor.defined() && t.tensor.device().memory_space() == MemorySpace::kGpu) {
        if (bytes > 0) device.copy_to_host_async(out, shard_pointer(*unit, t), bytes, *copy_stream);
      } else {
        if (!idle) device.synchronize();
        idle = true;
        unit->read_state(k, skip / t.elements_per_value, values, out);
      }
      data.states.push_back({t.name, dtype, t.elements_per_value, out});
      out += bytes;
    }
    snap.units.push_back(std::move(data));
  }
  if (copy_stream != nullptr) copy_stream->synchronize();
  return snap;
}

bool ShardSnapshot::can_view(const ShardedEngine& engine) {
  return engine.device().memory_space() == MemorySpace::kHost && engine.nvme_store() == nullptr;
}

std::unique_ptr<HostStagingBuffer> make_staging_buffer(ShardedEngine& engine, MemoryTracker* host_tracker) {
  if (engine.device().memory_space() == MemorySpace::kGpu) return std::make_unique<HostStagingBuffer>(engine.device());
  return std::make_unique<HostStagingBuffer>(host_tracker);
}

MemoryTracker* host_memory_tracker(ShardedEngine& engine) {
  Device& device = engine.device();
  return device.memory_space() == MemorySpace::kHost ? &device.memory() : nullptr;
}

}  // namespace tessera
