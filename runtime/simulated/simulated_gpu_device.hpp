// SimulatedGpuDevice: a discrete device simulated on the CPU, for testing what runs on a GPU
// without one. Its memory is separate from host memory as a GPU's is: device blocks come from a
// DeviceAddressSpace, whose addresses fault when the host touches them, and only its kernels
// (the CPU kernels on the blocks' backing memory), fills and copies reach them. Pinned host memory
// is ordinary host memory the device's copies and fills also accept (as a GPU's do).
//
// Streams: compute and communication run inline, as on the CPU device; the copy stream is a copy
// engine on its own thread that runs its work only once an event recorded after it is waited for
// (CopyEngineStream). An asynchronous copy on the copy stream fills its destination with NaN bytes
// (0xff) when it is issued and writes the data only then, so work that reads the destination without
// waiting for the copy's event reads NaN bytes, every time, instead of data a fast copy happened to
// leave: a pipeline that skips a wait computes on them, and its results change (the offload tests
// compare offloaded runs with resident ones bit for bit).
// The memory space is kGpu: communicators that reduce host memory refuse it, and collectives run
// through a StagedCommunicator (copies to pinned host memory around an MPI collective).
//
// Device memory is unlimited unless TESSERA_SIM_GPU_MEMORY gives a capacity in bytes (a GPU's
// memory, for tests of what a run does when it fills it): an allocation that would take the live
// device bytes past it fails as a GPU's would (std::bad_alloc, which Storage turns into
// OutOfMemoryError naming the device, the category and the bytes), and memory_budget() reports the
// room left under it, so the pre-flight check judges a run against it as against a real GPU's.
//
// Faults: TESSERA_SIM_GPU_FAULT plants one (device_fault_plan.hpp: an allocation that fails, a copy
// between host and device that fails, a kernel whose failure the compute stream reports at its next
// synchronization), at the n-th such event or during a step of the training loop (begin_step).
// Failed copies and kernels are DeviceError naming the op; like a GPU's errors they stay with the
// stream, and the synchronous host copies (synchronization points, as cudaMemcpy is) report a
// failure of the compute stream too.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "tessera/runtime/device.hpp"
#include "tessera/runtime/host_streams.hpp"
#include "tessera/runtime/pending_free_list.hpp"
#include "tessera/runtime/simulated/copy_engine_stream.hpp"
#include "tessera/runtime/simulated/device_address_space.hpp"
#include "tessera/runtime/simulated/device_fault_plan.hpp"
#include "tessera/runtime/simulated/fault_injector.hpp"
#include "tessera/runtime/simulated/simulated_gpu_kernels.hpp"

namespace tessera {

// The byte an asynchronous copy's destination holds until the copy has run (0xff: NaN in f32, bf16
// and f16).
inline constexpr unsigned char kCopyPendingByte = 0xff;

// What a simulated GPU is made with.
struct SimulatedGpuSettings {
  std::int64_t capacity = -1;            // device memory in bytes; -1: unlimited
  std::optional<DeviceFaultPlan> fault;  // the planted fault; none by default
  // TESSERA_SIM_GPU_MEMORY and TESSERA_SIM_GPU_FAULT; throws std::invalid_argument naming the
  // variable and what to write for a bad value.
  static SimulatedGpuSettings from_environment();
};

class SimulatedGpuDevice final : public Device {
 public:
  // Settings from the environment (SimulatedGpuSettings::from_environment).
  SimulatedGpuDevice();
  explicit SimulatedGpuDevice(SimulatedGpuSettings settings);
  // Waits for the copy engine and every pending block, then frees them (never throws).
  ~SimulatedGpuDevice() override;
  SimulatedGpuDevice(const SimulatedGpuDevice&) = delete;
  SimulatedGpuDevice& operator=(const SimulatedGpuDevice&) = delete;

  DeviceKind kind() const override { return DeviceKind::kSimulatedGpu; }
  std::string name() const override;
  MemorySpace memory_space() const override { return MemorySpace::kGpu; }

  void* allocate(std::size_t bytes, MemoryKind kind) override;
  MemoryBudget memory_budget() const override;
  void deallocate(void* ptr, std::size_t bytes, MemoryKind kind, std::span<const Event> pending) noexcept override;
  std::size_t pending_free_bytes() const override { return pending_frees_.bytes(); }

  // `dst`, `src` of copy and `dst` of fill_zero: device or pinned host memory of this device.
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, std::size_t bytes) override;
  void fill_zero(void* dst, std::size_t bytes) override;
  void copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, Stream& stream) override;
  void copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, Stream& stream) override;

  Stream& stream(StreamRole role) override;
  void synchronize() override;
  void begin_step(std::int64_t step) override { faults_.begin_step(step); }
  const Kernels& kernels() const override { return kernels_; }
  const DeviceAddressSpace& address_space() const { return space_; }

 private:
  // Backing memory of a device pointer, or a pinned host pointer of this device as it is.
  void* reach(const void* p, const char* what) const;
  // A host buffer the host may touch: refused when it is device memory.
  void check_host(const void* p, const char* what) const;
  // A synchronous host copy: reports a failure of the compute stream, then the planted copy fault.
  void before_host_copy(const char* op, std::size_t bytes, const char* direction);
  // The planted copy fault for an asynchronous copy: true (and `stream` failed) when it fires.
  bool async_copy_fails(const char* op, std::size_t bytes, const char* direction, Stream& stream);
  // The planted kernel fault: the compute stream fails with a DeviceError naming `op`.
  void fail_kernel(const char* op);

  std::int64_t capacity_ = -1;                 // TESSERA_SIM_GPU_MEMORY; -1: unlimited
  std::atomic<std::int64_t> device_bytes_{0};  // live device blocks, pending frees included
  FaultInjector faults_;
  DeviceAddressSpace space_;
  SimulatedGpuKernels kernels_{space_, faults_, [this](const char* op) { fail_kernel(op); }};
  PendingFreeList pending_frees_;
  // After pending_frees_: the copy engine's work ends before blocks are freed.
  HostStreams streams_{std::make_unique<CopyEngineStream>()};
};

std::unique_ptr<Device> make_simulated_gpu_device();

}  // namespace tessera
