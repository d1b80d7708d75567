// CudaKernels embedding against CpuKernels: forward and backward give the CPU's bits for f32 (the
// same additions in the same order), including heavily repeated tokens, channels spanning more than
// one 1024-channel slice, t = 1, and without a position table (wpe and dwpe null: the forward copies
// the token rows); the backward is the same bits on every run; bf16 tensors through
// the typed launchers within the bf16 tolerance; a token outside the table throws
// std::out_of_range naming it before anything is written — at the call, and, for the backward on a
// CudaDevice (which checks without waiting), at the stream's next synchronize.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/tensor.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"
#include "tests/runtime/cuda/gpu_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::random_floats;
using test::random_tokens;

class CudaEmbedding : public test::CudaKernelTest {};

struct EmbedShape {
  std::int64_t b, t, c, v, max_t;
};

std::string describe(const EmbedShape& s) {
  return "(b=" + std::to_string(s.b) + ",t=" + std::to_string(s.t) + ",c=" + std::to_string(s.c) +
         ",v=" + std::to_string(s.v) + ")";
}

void check_against_cpu(const CudaKernels& gpu, const CpuKernels& cpu, const EmbedShape& s, std::uint32_t seed) {
  const auto tokens = random_tokens(s.b * s.t, static_cast<std::int32_t>(s.v), seed);
  const auto wte = random_floats(s.v * s.c, seed + 1), wpe = random_floats(s.max_t * s.c, seed + 2);
  const auto dout = random_floats(s.b * s.t * s.c, seed + 3);
  auto dwte = random_floats(s.v * s.c, seed + 4), dwpe = random_floats(s.max_t * s.c, seed + 5);  // accumulated
  std::vector<float> out(s.b * s.t * s.c);
  DeviceBuffer<std::int32_t> g_tokens(tokens);
  DeviceBuffer<float> g_wte(wte), g_wpe(wpe), g_dout(dout), g_dwte(dwte), g_dwpe(dwpe), g_out(out.size());
  gpu.embedding_forward(g_out.get(), g_tokens.get(), g_wte.get(), g_wpe.get(), s.b, s.t, s.c, s.v);
  cpu.embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), s.b, s.t, s.c, s.v);
  const std::string label = "embedding f32 " + describe(s);
  test::expect_same_bits(g_out.download(), out, label + " forward out vs CPU");
  gpu.embedding_backward(g_dwte.get(), g_dwpe.get(), g_dout.get(), g_tokens.get(), s.b, s.t, s.c, s.v);
  cpu.embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), s.b, s.t, s.c, s.v);
  test::expect_same_bits(g_dwte.download(), dwte, label + " backward dwte vs CPU");
  test::expect_same_bits(g_dwpe.download(), dwpe, label + " backward dwpe vs CPU");
}

TEST_F(CudaEmbedding, ForwardAndBackwardGiveTheCpuBits) {
  check_against_cpu(*gpu_, cpu_, {2, 5, 12, 7, 9}, 1);          // few tokens, many repeats
  check_against_cpu(*gpu_, cpu_, {3, 1, 33, 50, 4}, 2);         // t = 1, c not a multiple of 32
  check_against_cpu(*gpu_, cpu_, {4, 300, 1100, 40, 300}, 3);   // two channel slices, 1200 rows (several ballot chunks)
  check_against_cpu(*gpu_, cpu_, {1, 700, 64, 5000, 1024}, 4);  // mostly distinct tokens
}

TEST_F(CudaEmbedding, WithoutPositionTableGivesTheCpuBits) {
  for (const EmbedShape& s : {EmbedShape{2, 5, 12, 7, 0}, EmbedShape{4, 300, 1100, 40, 0}}) {
    const auto tokens = random_tokens(s.b * s.t, static_cast<std::int32_t>(s.v), 41);
    const auto wte = random_floats(s.v * s.c, 42), dout = random_floats(s.b * s.t * s.c, 43);
    auto dwte = random_floats(s.v * s.c, 44);  // accumulated into
    std::vector<float> out(s.b * s.t * s.c);
    DeviceBuffer<std::int32_t> g_tokens(tokens);
    DeviceBuffer<float> g_wte(wte), g_dout(dout), g_dwte(dwte), g_out(out.size());
    gpu_->embedding_forward(g_out.get(), g_tokens.get(), g_wte.get(), nullptr, s.b, s.t, s.c, s.v);
    cpu_.embedding_forward(out.data(), tokens.data(), wte.data(), nullptr, s.b, s.t, s.c, s.v);
    const std::string label = "embedding f32 " + describe(s) + " without positions";
    test::expect_same_bits(g_out.download(), out, label + " forward out vs CPU");
    gpu_->embedding_backward(g_dwte.get(), nullptr, g_dout.get(), g_tokens.get(), s.b, s.t, s.c, s.v);
    cpu_.embedding_backward(dwte.data(), nullptr, dout.data(), tokens.data(), s.b, s.t, s.c, s.v);
    test::expect_same_bits(g_dwte.download(), dwte, label + " backward dwte vs CPU");
  }
  // bf16 through the typed launchers: the forward copies the token rows' bits.
  const EmbedShape s{2, 33, 70, 11, 0};
  const auto tokens = random_tokens(s.b * s.t, static_cast<std::int32_t>(s.v), 45);
  const auto wte = test::round_to_bf16(random_floats(s.v * s.c, 46));
  std::vector<float> out(s.b * s.t * s.c);
  cpu_.embedding_forward(out.data(), tokens.data(), wte.data(), nullptr, s.b, s.t, s.c, s.v);
  DeviceBuffer<std::int32_t> g_tokens(tokens);
  DeviceBuffer<__nv_bfloat16> g_wte(test::to_bf16(wte)), g_out(out.size());
  detail::launch_embedding_forward<__nv_bfloat16>(g_out.get(), g_tokens.get(), g_wte.get(), nullptr, s.b, s.t, s.c,
                                                  stream_);
  test::expect_same_bits(test::from_bf16(g_out.download()), out,
                         "embedding bf16 " + describe(s) + " without positions forward out");
}

TEST_F(CudaEmbedding, BackwardIsTheSameBitsEveryRun) {
  const EmbedShape s{8, 128, 96, 13, 128};
  const auto tokens = random_tokens(s.b * s.t, static_cast<std::int32_t>(s.v), 11);
  const auto dout = random_floats(s.b * s.t * s.c, 12);
  std::vector<std::vector<float>> dwte_runs, dwpe_runs;
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<std::int32_t> g_tokens(tokens);
    DeviceBuffer<float> g_dout(dout), g_dwte(std::vector<float>(s.v * s.c, 0.0f));
    DeviceBuffer<float> g_dwpe(std::vector<float>(s.max_t * s.c, 0.0f));
    gpu_->embedding_backward(g_dwte.get(), g_dwpe.get(), g_dout.get(), g_tokens.get(), s.b, s.t, s.c, s.v);
    dwte_runs.push_back(g_dwte.download());
    dwpe_runs.push_back(g_dwpe.download());
  }
  test::expect_same_bits(dwte_runs[1], dwte_runs[0], "embedding_backward f32 " + describe(s) + " dwte, run 2 vs 1");
  test::expect_same_bits(dwpe_runs[1], dwpe_runs[0], "embedding_backward f32 " + describe(s) + " dwpe, run 2 vs 1");
}

TEST_F(CudaEmbedding, Bf16MatchesCpuOnRoundedInputs) {
  const EmbedShape s{2, 33, 70, 11, 40};
  const auto tokens = random_tokens(s.b * s.t, static_cast<std::int32_t>(s.v), 21);
  const auto wte = test::round_to_bf16(random_floats(s.v * s.c, 22));
  const auto wpe = test::round_to_bf16(random_floats(s.max_t * s.c, 23));
  const auto dout = test::round_to_bf16(random_floats(s.b * s.t * s.c, 24));
  std::vector<float> out(s.b * s.t * s.c), dwte(s.v * s.c, 0.0f), dwpe(s.max_t * s.c, 0.0f);
  DeviceBuffer<std::int32_t> g_tokens(tokens);
  DeviceBuffer<__nv_bfloat16> g_wte(test::to_bf16(wte)), g_wpe(test::to_bf16(wpe)), g_dout(test::to_bf16(dout));
  DeviceBuffer<__nv_bfloat16> g_out(out.size()), g_dwte(test::to_bf16(dwte)), g_dwpe(test::to_bf16(dwpe));
  detail::launch_embedding_forward(g_out.get(), g_tokens.get(), g_wte.get(), g_wpe.get(), s.b, s.t, s.c, stream_);
  detail::launch_embedding_backward(g_dwte.get(), g_dwpe.get(), g_dout.get(), g_tokens.get(), s.b, s.t, s.c, stream_);
  cpu_.embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), s.b, s.t, s.c, s.v);
  cpu_.embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), s.b, s.t, s.c, s.v);
  const std::string label = "embedding bf16 " + describe(s);
  test::expect_close(test::from_bf16(g_out.download()), out, kBf16Tolerance, label + " forward out");
  test::expect_close(test::from_bf16(g_dwte.download()), dwte, kBf16Tolerance, label + " backward dwte");
  test::expect_close(test::from_bf16(g_dwpe.download()), dwpe, kBf16Tolerance, label + " backward dwpe");
}

TEST_F(CudaEmbedding, TokenOutsideTheTableThrowsBeforeWriting) {
  const EmbedShape s{2, 3, 4, 5, 3};
  const std::vector<std::int32_t> tokens = {0, 1, 2, 3, 7, -1};  // token[4] = 7 is the first bad one
  const std::vector<float> sentinel(s.b * s.t * s.c, 42.0f);
  DeviceBuffer<std::int32_t> g_tokens(tokens);
  DeviceBuffer<float> g_wte(random_floats(s.v * s.c, 31)), g_wpe(random_floats(s.max_t * s.c, 32));
  DeviceBuffer<float> g_out(sentinel), g_dout(sentinel);
  DeviceBuffer<float> g_dwte(std::vector<float>(s.v * s.c, 1.0f)), g_dwpe(std::vector<float>(s.max_t * s.c, 1.0f));
  try {
    gpu_->embedding_forward(g_out.get(), g_tokens.get(), g_wte.get(), g_wpe.get(), s.b, s.t, s.c, s.v);
    ADD_FAILURE() << "embedding_forward with token[4] = 7 outside [0, 5) did not throw";
  } catch (const std::out_of_range& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("token[4] = 7"), std::string::npos) << message;
    EXPECT_NE(message.find("[0, 5)"), std::string::npos) << message;
  }
  EXPECT_EQ(g_out.download(), sentinel) << "embedding_forward wrote out before refusing a bad token";
  EXPECT_THROW(gpu_->embedding_backward(g_dwte.get(), g_dwpe.get(), g_dout.get(), g_tokens.get(), s.b, s.t, s.c, s.v),
               std::out_of_range);
  EXPECT_EQ(g_dwte.download(), std::vector<float>(s.v * s.c, 1.0f)) << "embedding_backward wrote dwte";
  EXPECT_EQ(g_dwpe.download(), std::vector<float>(s.max_t * s.c, 1.0f)) << "embedding_backward wrote dwpe";
}

TEST(CudaDeviceEmbedding, BackwardRefusesABadTokenAtTheNextSynchronize) {
  TESSERA_REQUIRE_GPU();
  auto device = make_device(DeviceChoice::kCuda);
  const EmbedShape s{2, 3, 4, 5, 3};
  const std::vector<std::int32_t> tokens = {0, 1, 2, 3, 7, -1};  // token[4] = 7 is the first bad one
  const std::vector<float> ones_wte(s.v * s.c, 1.0f), ones_wpe(s.max_t * s.c, 1.0f);
  Tensor g_tokens = Tensor::from_host_i32(*device, tokens, {s.b, s.t}, MemoryCategory::kWorkspace);
  Tensor dwte = Tensor::from_host(*device, ones_wte, {s.v, s.c}, DType::kF32, MemoryCategory::kGradients);
  Tensor dwpe = Tensor::from_host(*device, ones_wpe, {s.max_t, s.c}, DType::kF32, MemoryCategory::kGradients);
  Tensor dout = Tensor::from_host(*device, random_floats(s.b * s.t * s.c, 5), {s.b, s.t, s.c}, DType::kF32,
                                  MemoryCategory::kActivations);
  device->kernels().embedding_backward(dwte.data_as<float>(), dwpe.data_as<float>(), dout.data_as<float>(),
                                       g_tokens.data_as<std::int32_t>(), s.b, s.t, s.c, s.v);  // does not wait
  try {
    device->synchronize();
    ADD_FAILURE() << "embedding_backward with token[4] = 7 outside [0, 5) did not fail the stream";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("token[4] = 7"), std::string::npos) << e.what();
  }
  std::vector<float> host_wte(ones_wte.size()), host_wpe(ones_wpe.size());
  cudaMemcpy(host_wte.data(), dwte.data(), host_wte.size() * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(host_wpe.data(), dwpe.data(), host_wpe.size() * sizeof(float), cudaMemcpyDeviceToHost);
  EXPECT_EQ(host_wte, ones_wte) << "embedding_backward wrote dwte";
  EXPECT_EQ(host_wpe, ones_wpe) << "embedding_backward wrote dwpe";
}

}  // namespace
}  // namespace tessera
