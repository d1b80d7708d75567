// Helpers shared by the CUDA kernel tests: a fixture that skips (GTEST_SKIP) when there is no CUDA
// device and otherwise gives a stream, a CudaKernels on it and the CPU reference kernels; device
// buffers (cudaMalloc RAII) filled from and read back into host vectors; bf16 conversions of host
// data; and comparisons whose failures name the op, dtype, shape, element, expected and actual.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tessera/precision/float_bits.hpp"
#include "tessera/precision/tolerance.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_kernels.hpp"

namespace tessera::test {

// Why no CUDA device can be used, or "" when device 0 is there.
inline std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(error);
  if (count == 0) return "cudaGetDeviceCount returned 0";
  return "";
}

// Device memory for n elements of T, freed on destruction.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n_ > 0) TESSERA_CUDA_CHECK(cudaMalloc(&ptr_, n_ * sizeof(T)));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return ptr_; }
  std::size_t size() const { return n_; }

  // Waits for all queued work, copies, and waits for the copy.
  void upload(const std::vector<T>& host) {
    EXPECT_EQ(host.size(), n_) << "DeviceBuffer::upload: size";
    TESSERA_CUDA_CHECK(cudaDeviceSynchronize());
    if (n_ > 0) TESSERA_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
    // A copy from pageable memory may still be in flight when cudaMemcpy returns, and the kernels'
    // non-blocking stream does not wait for it.
    TESSERA_CUDA_CHECK(cudaDeviceSynchronize());
  }
  // Waits for all queued work, then copies back.
  std::vector<T> download() const {
    std::vector<T> host(n_);
    TESSERA_CUDA_CHECK(cudaDeviceSynchronize());
    if (n_ > 0) TESSERA_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  std::size_t n_ = 0;
  T* ptr_ = nullptr;
};

// A CUDA stream, a CudaKernels (device 0, GemmMath::kF32) on it and the CPU reference kernels; skips
// the test when there is no CUDA device.
class CudaKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = cuda_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no CUDA device: " << reason;
    TESSERA_CUDA_CHECK(cudaSetDevice(0));
    TESSERA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    gpu_ = std::make_unique<CudaKernels>(0, stream_, GemmMath::kF32);
  }
  void TearDown() override {
    gpu_.reset();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  void sync() const { TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CudaKernels> gpu_;
  CpuKernels cpu_;
};

// "(n=33,c=768)": the shape of a row-wise kernel's case, for its messages.
inline std::string describe(std::int64_t n, std::int64_t c) {
  return "(n=" + std::to_string(n) + ",c=" + std::to_string(c) + ")";
}

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (auto& x : out) x = dist(gen);
  return out;
}

inline std::vector<std::int32_t> random_tokens(std::size_t n, std::int32_t v, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::int32_t> dist(0, v - 1);
  std::vector<std::int32_t> out(n);
  for (auto& x : out) x = dist(gen);
  return out;
}

// Host bf16 values, rounded to nearest even as precision/float_bits.hpp does.
inline std::vector<__nv_bfloat16> to_bf16(const std::vector<float>& x) {
  std::vector<__nv_bfloat16> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    __nv_bfloat16_raw raw;
    raw.x = f32_to_bf16(x[i]);
    out[i] = __nv_bfloat16(raw);
  }
  return out;
}

inline std::vector<float> from_bf16(const std::vector<__nv_bfloat16>& x) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = bf16_to_f32(static_cast<__nv_bfloat16_raw>(x[i]).x);
  return out;
}

// The same values rounded to bf16 and back: inputs a bf16 kernel and the f32 CPU reference share.
inline std::vector<float> round_to_bf16(const std::vector<float>& x) { return from_bf16(to_bf16(x)); }

// |actual - expected| <= tol * max|expected| everywhere; on failure reports `what` (op, dtype,
// shape, tensor), how many elements are off, and the worst one with expected and actual values.
template <typename A, typename E>
void expect_close(const std::vector<A>& actual, const std::vector<E>& expected, double tol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what << ": size";
  double scale = 0.0;
  for (const E& e : expected) scale = std::fmax(scale, std::fabs(static_cast<double>(e)));
  scale = std::fmax(scale, 1e-30);
  double worst = -1.0;
  std::size_t worst_i = 0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double err = std::fabs(static_cast<double>(actual[i]) - static_cast<double>(expected[i]));
    const bool off = !(err <= tol * scale);  // NaN counts as off
    bad += off ? 1 : 0;
    if (off && (worst < 0.0 || std::isnan(err) || err > worst)) {
      worst = std::isnan(err) ? INFINITY : err;
      worst_i = i;
    }
  }
  if (bad == 0) return;
  ADD_FAILURE() << what << ": " << bad << " of " << actual.size() << " elements off; worst element [" << worst_i
                << "] expected " << static_cast<double>(expected[worst_i]) << " actual "
                << static_cast<double>(actual[worst_i]) << " (tolerance " << tol << " x max|expected| " << scale << ")";
}

// Bit equality of two arrays of 4- or 8-byte values; reports the first difference.
template <typename F>
void expect_same_bits(const std::vector<F>& actual, const std::vector<F>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what << ": size";
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::memcmp(&actual[i], &expected[i], sizeof(F)) != 0) {
      ADD_FAILURE() << what << ": element [" << i << "] expected " << static_cast<double>(expected[i]) << " actual "
                    << static_cast<double>(actual[i]) << " (bits differ)";
      return;
    }
  }
}

}  // namespace tessera::test
