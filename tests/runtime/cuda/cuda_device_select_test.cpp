// One device per process: work on a CudaDevice from a thread that never chose a GPU (a watchdog's,
// a checkpoint writer's) runs on that device and leaves the thread there, and a device other than
// GPU 0 never creates a context on GPU 0 (about 0.5 GB on every GPU 0 of a node, once per rank).
// The second test needs two GPUs and skips, naming why, with fewer.
#include <cuda.h>  // the driver's types; the driver itself is opened at run time (a machine without a
                   // GPU has no libcuda, and the test binary must still start there to skip)
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tessera/runtime/cuda/cuda_device.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/storage.hpp"
#include "tessera/runtime/tensor.hpp"
#include "tests/runtime/cuda/gpu_test_support.hpp"

namespace tessera {
namespace {

// Allocates device and pinned memory, runs a kernel, copies, records and queries an event, frees.
void use(CudaDevice& device) {
  Tensor a = Tensor::from_host(device, std::vector<float>(4096, 1.5f), {4096}, DType::kF32, MemoryCategory::kActivations);
  device.kernels().scale(a.data_as<float>(), 2.0f, 4096);
  auto pinned = Storage::allocate(device, 1 << 20, MemoryCategory::kCommBuffers, MemoryKind::kPinnedHost);
  Event done = device.stream(StreamRole::kCompute).record();
  while (!done.query()) std::this_thread::yield();
  EXPECT_EQ(a.to_host_f32()[17], 3.0f);
}

int current_device() {
  int current = -1;
  EXPECT_EQ(cudaGetDevice(&current), cudaSuccess);
  return current;
}

TEST(CudaDeviceSelect, AFreshThreadWorksOnTheDeviceItIsGiven) {
  TESSERA_REQUIRE_GPU();
  const int last = device_count(DeviceChoice::kCuda) - 1;
  CudaDevice device(last);
  int seen = -1;
  std::thread worker([&] {
    use(device);
    seen = current_device();
  });
  worker.join();
  EXPECT_EQ(seen, last) << "the thread's current device after using GPU " << last;
}

// Whether GPU 0's primary context is active in this process, asked of the driver (which creates
// no context to answer).
int gpu_zero_context_active() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return -1;
  using Init = CUresult (*)(unsigned);
  using DeviceGet = CUresult (*)(CUdevice*, int);
  using PrimaryState = CUresult (*)(CUdevice, unsigned*, int*);
  auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  auto device_get = reinterpret_cast<DeviceGet>(dlsym(driver, "cuDeviceGet"));
  auto state = reinterpret_cast<PrimaryState>(dlsym(driver, "cuDevicePrimaryCtxGetState"));
  CUdevice zero = 0;
  unsigned flags = 0;
  int active = -1;
  if (init == nullptr || device_get == nullptr || state == nullptr || init(0) != CUDA_SUCCESS ||
      device_get(&zero, 0) != CUDA_SUCCESS || state(zero, &flags, &active) != CUDA_SUCCESS) {
    active = -1;
  }
  dlclose(driver);
  return active;
}

TEST(CudaDeviceSelect, GpuOneLeavesGpuZeroWithoutAContext) {
  TESSERA_REQUIRE_GPU();
  if (device_count(DeviceChoice::kCuda) < 2) GTEST_SKIP() << "needs two GPUs: this machine shows one";
  int active = gpu_zero_context_active();
  ASSERT_GE(active, 0) << "the driver (libcuda.so.1) did not say whether GPU 0 has a context";
  if (active != 0) GTEST_SKIP() << "GPU 0 already has this process's context before the test";
  {
    CudaDevice device(1);
    std::thread worker([&] { use(device); });
    worker.join();
    use(device);
  }
  active = gpu_zero_context_active();
  EXPECT_EQ(active, 0) << "using GPU 1 (from the main thread and a fresh one) created a context on GPU 0";
}

}  // namespace
}  // namespace tessera
