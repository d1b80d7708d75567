// custom_op: a program of its own, built against an installed Tessera, that defines an element-wise
// op the library does not ship (squared ReLU, squared_relu.hpp: the formula once, as functors) and
// runs it inside a model, Sequential(Linear, SquaredRelu, Linear), forward and backward:
//   custom_op cpu     on the CPU device
//   custom_op cuda    on the first GPU (built with CUDA: squared_relu_cuda.cu registers the kernels)
//   custom_op check   on the CPU, then on the GPU when there is one, and compares: the op's own
//                     output bit for bit, the model's output and input gradient within 1e-4 (the
//                     GEMMs of the two devices differ in their last bits). Exit 3 on a mismatch;
//                     without a usable GPU it says "no GPU" and exits 0.
// Prints a line per run: "CPU" or "GPU", the sum of the outputs and of the input gradient, the device.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <tessera/model/modules/linear.hpp>
#include <tessera/model/modules/sequential.hpp>
#include <tessera/runtime/device_factory.hpp>
#include <tessera/runtime/elementwise_map.hpp>
#include <vector>

#include "squared_relu.hpp"

namespace {

using namespace tessera;

constexpr std::int64_t kRows = 6, kIn = 8, kHidden = 16, kOut = 4;

struct Result {
  std::vector<float> op;      // squared ReLU of the inputs alone (kRows, kIn)
  std::vector<float> output;  // the model's output (kRows, kOut)
  std::vector<float> dx;      // its input gradient for dy = 1
};

std::vector<float> inputs() {
  std::vector<float> x(kRows * kIn);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * static_cast<float>(i)) * 2.0f;
  return x;
}

Result run_on(Device& device, const char* label) {
  Sequential model(std::make_unique<Linear>(kIn, kHidden, true, 0.3f), std::make_unique<SquaredRelu>(),
                   std::make_unique<Linear>(kHidden, kOut, true, 0.3f));
  materialize_parameters(model, device, /*seed=*/11);
  allocate_gradients(model, device);
  Context ctx(device);
  const Tensor x = Tensor::from_host(device, inputs(), {kRows, kIn}, DType::kF32, MemoryCategory::kActivations);
  Result r;
  Tensor op = Tensor::empty(device, x.shape(), DType::kF32, MemoryCategory::kActivations);
  elementwise_map(device, SquaredReluForward{}, op, x);
  r.op = op.to_host_f32();
  const Tensor y = model.forward(ctx, x);
  r.output = y.to_host_f32();
  const Tensor dy = Tensor::from_host(device, std::vector<float>(static_cast<std::size_t>(y.numel()), 1.0f), y.shape(),
                                      DType::kF32, MemoryCategory::kActivations);
  r.dx = model.backward(ctx, dy).to_host_f32();
  device.synchronize();
  double out_sum = 0.0, dx_sum = 0.0;
  for (float v : r.output) out_sum += v;
  for (float v : r.dx) dx_sum += v;
  std::printf("custom_op: %s output sum %.6f input gradient sum %.6f (%s)\n", label, out_sum, dx_sum,
              device.name().c_str());
  return r;
}

// Elements of `actual` farther than tol (relative to the largest magnitude) from `expected`.
int mismatches(const std::vector<float>& actual, const std::vector<float>& expected, double tol, const char* what) {
  double largest = 0.0;
  for (float v : expected) largest = std::fmax(largest, std::fabs(v));
  int wrong = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (std::fabs(static_cast<double>(actual[i]) - expected[i]) > tol * largest) {
      if (wrong++ < 3) std::printf("  %s[%zu]: GPU %.9g, CPU %.9g\n", what, i, actual[i], expected[i]);
    }
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "cpu" && mode != "cuda" && mode != "check") {
    std::fprintf(stderr, "usage: custom_op cpu|cuda|check\n");
    return 2;
  }
  try {
    if (mode == "cuda") {
      run_on(*make_device(DeviceChoice::kCuda), "GPU");
      return 0;
    }
    const Result cpu = run_on(*make_device(DeviceChoice::kCpu), "CPU");
    if (mode == "cpu") return 0;
    if (device_count(DeviceChoice::kCuda) == 0) {
      std::printf("custom_op: no GPU: the GPU comparison did not run\n");
      return 0;
    }
    const Result gpu = run_on(*make_device(DeviceChoice::kCuda), "GPU");
    const int wrong = mismatches(gpu.op, cpu.op, 0.0, "squared ReLU") +
                      mismatches(gpu.output, cpu.output, 1e-4, "output") +
                      mismatches(gpu.dx, cpu.dx, 1e-4, "input gradient");
    if (wrong > 0) {
      std::printf("custom_op: the GPU result differs from the CPU's in %d elements\n", wrong);
      return 3;
    }
    std::printf("custom_op: the GPU result matches the CPU's (the op bit for bit)\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "custom_op: %s\n", e.what());
    return 1;
  }
}
