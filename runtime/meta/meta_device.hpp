// MetaDevice: a device with sizes but no memory. allocate returns nullptr, yet every Storage reports
// its bytes to the trackers exactly as on the CPU device; copies and fills do nothing (a copy to the
// host leaves the host buffer as it was, so Tensor::to_host_f32 gives zeros); every kernel does
// nothing; streams run inline and their events are complete. The memory planner runs the real
// modules and engine on it to learn what they allocate, by category, in no time and no memory.
#pragma once

#include <memory>

#include "tessera/runtime/device.hpp"
#include "tessera/runtime/inline_stream.hpp"
#include "tessera/runtime/meta/meta_kernels.hpp"

namespace tessera {

class MetaDevice final : public Device {
 public:
  // `attention_scratch`: the scratch sizes of the device being planned for (empty: none).
  // `memory_is_host`: whether that device's memory is host memory (the CPU) or not (a GPU), which
  // decides where offloaded state is updated and so which buffers exist (Placement).
  explicit MetaDevice(AttentionScratchSize attention_scratch = {}, bool memory_is_host = true)
      : kernels_(std::move(attention_scratch)), memory_is_host_(memory_is_host) {}

  DeviceKind kind() const override { return DeviceKind::kMeta; }
  std::string name() const override { return "meta"; }
  MemorySpace memory_space() const override { return MemorySpace::kMeta; }
  bool memory_is_host() const override { return memory_is_host_; }

  void* allocate(std::size_t, MemoryKind) override { return nullptr; }
  void deallocate(void*, std::size_t, MemoryKind, std::span<const Event>) noexcept override {}
  std::size_t pending_free_bytes() const override { return 0; }

  void copy(void*, const void*, std::size_t) override {}
  void copy_to_host(void*, const void*, std::size_t) override {}
  void copy_from_host(void*, const void*, std::size_t) override {}
  void fill_zero(void*, std::size_t) override {}
  void copy_to_host_async(void*, const void*, std::size_t, Stream&) override {}
  void copy_from_host_async(void*, const void*, std::size_t, Stream&) override {}

  Stream& stream(StreamRole role) override;
  void synchronize() override;
  const Kernels& kernels() const override { return kernels_; }

 private:
  MetaKernels kernels_;
  bool memory_is_host_ = true;
  InlineStream compute_{StreamRole::kCompute};
  InlineStream communication_{StreamRole::kCommunication};
  InlineStream copy_{StreamRole::kCopy};
};

// A new meta device with its own trackers; `attention_scratch` as MetaDevice's.
std::unique_ptr<Device> make_meta_device(AttentionScratchSize attention_scratch = {}, bool memory_is_host = true);

}  // namespace tessera
