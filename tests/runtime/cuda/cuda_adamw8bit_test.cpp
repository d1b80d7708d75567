// CudaKernels::adamw8bit_update against CpuKernels, one step at a time from the same state (a state
// the CPU has already stepped, so every code and scale is in use): parameters and block scales to
// f32 tolerance, codes equal or one level apart where a value sits on a threshold, padding between
// segments never updated, for blocks smaller than, equal to and larger than a thread block (up to
// kMaxQuantBlock) and more segments than one launch passes; the bf16 variant writes the updated
// parameters as bf16; ranges that are not whole blocks are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

class CudaAdamW8bit : public test::CudaKernelTest {};

AdamWScalars scalars(int step, float wd) {
  AdamWScalars s;
  s.lr = 1e-2f;
  s.weight_decay = wd;
  s.bias_correction1 = static_cast<float>(1.0 - std::pow(0.9, step));
  s.bias_correction2 = static_cast<float>(1.0 - std::pow(0.95, step));
  return s;
}

// Parameters of 1 to 300 elements separated by 0 to 3 padding elements, alternating weight decay.
std::vector<ParamSegment> segments_over(std::int64_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::int64_t> size(1, 300), gap(0, 3);
  std::vector<ParamSegment> segments;
  for (std::int64_t at = gap(gen); at < n; at += gap(gen)) {
    const std::int64_t count = std::min(size(gen), n - at);
    segments.push_back({at, count, segments.size() % 2 == 1});
    at += count;
  }
  return segments;
}

struct State {
  std::vector<float> param, m_absmax, v_absmax;
  std::vector<std::int8_t> m_codes;
  std::vector<std::uint8_t> v_codes;
};

State cpu_step(const CpuKernels& cpu, State s, const std::vector<float>& grad, std::int64_t block,
               const std::vector<ParamSegment>& segments, int step) {
  cpu.adamw8bit_update(s.param.data(), grad.data(), s.m_codes.data(), s.m_absmax.data(), s.v_codes.data(),
                       s.v_absmax.data(), static_cast<std::int64_t>(grad.size()), block, segments, scalars(step, 0.0f),
                       scalars(step, 0.1f));
  return s;
}

template <typename C>
void expect_codes_close(const std::vector<C>& actual, const std::vector<C>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  std::size_t one_off = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const int diff = std::abs(static_cast<int>(actual[i]) - static_cast<int>(expected[i]));
    if (diff > 1) {
      ADD_FAILURE() << what << ": element [" << i << "] expected code " << static_cast<int>(expected[i]) << " actual "
                    << static_cast<int>(actual[i]) << " (more than one level apart)";
      return;
    }
    one_off += diff;
  }
  EXPECT_LE(one_off, actual.size() / 100 + 1) << what << ": " << one_off << " of " << actual.size()
                                              << " codes one level apart (values on a threshold should be rare)";
}

void check_block_size(const CudaKernels& gpu, const CpuKernels& cpu, std::int64_t block, std::int64_t blocks,
                      std::uint32_t seed) {
  const std::int64_t n = block * blocks;
  const auto segments = segments_over(n, seed);
  State state{random_floats(n, seed + 1), std::vector<float>(blocks, 0.0f), std::vector<float>(blocks, 0.0f),
              std::vector<std::int8_t>(n, 0), std::vector<std::uint8_t>(n, 0)};
  state = cpu_step(cpu, state, random_floats(n, seed + 2), block, segments, 1);  // every code in use
  for (int step = 2; step <= 3; ++step) {
    const auto grad = random_floats(n, seed + 10 + step, -3.0f, 3.0f);
    DeviceBuffer<float> g_param(state.param), g_grad(grad), g_m_absmax(state.m_absmax), g_v_absmax(state.v_absmax);
    DeviceBuffer<std::int8_t> g_m_codes(state.m_codes);
    DeviceBuffer<std::uint8_t> g_v_codes(state.v_codes);
    gpu.adamw8bit_update(g_param.get(), g_grad.get(), g_m_codes.get(), g_m_absmax.get(), g_v_codes.get(),
                         g_v_absmax.get(), n, block, segments, scalars(step, 0.0f), scalars(step, 0.1f));
    const State before = state;
    state = cpu_step(cpu, state, grad, block, segments, step);
    const std::string label = "adamw8bit_update f32 (n=" + std::to_string(n) + ",block=" + std::to_string(block) +
                              ",segments=" + std::to_string(segments.size()) + ") step " + std::to_string(step);
    const auto param = g_param.download();
    expect_close(param, state.param, kF32Tolerance, label + " param");
    expect_close(g_m_absmax.download(), state.m_absmax, kF32Tolerance, label + " m_absmax");
    expect_close(g_v_absmax.download(), state.v_absmax, kF32Tolerance, label + " v_absmax");
    expect_codes_close(g_m_codes.download(), state.m_codes, label + " m_codes");
    expect_codes_close(g_v_codes.download(), state.v_codes, label + " v_codes");
    std::vector<bool> in_segment(n, false);
    for (const ParamSegment& s : segments) {
      for (std::int64_t i = s.begin; i < s.begin + s.count; ++i) in_segment[i] = true;
    }
    for (std::int64_t i = 0; i < n; ++i) {
      if (!in_segment[i] && param[i] != before.param[i]) {
        ADD_FAILURE() << label << ": padding element [" << i << "] changed from " << before.param[i] << " to "
                      << param[i];
        break;
      }
    }
  }
}

TEST_F(CudaAdamW8bit, MatchesCpuForEveryBlockSize) {
  check_block_size(*gpu_, cpu_, 64, 37, 1);  // blocks smaller than a thread block
  check_block_size(*gpu_, cpu_, 256, 9, 2);
  check_block_size(*gpu_, cpu_, 2048, 40, 3);  // > 128 segments: several segment-table launches
  check_block_size(*gpu_, cpu_, kMaxQuantBlock, 3, 4);
}

TEST_F(CudaAdamW8bit, Bf16GradientsAndBf16WriteBack) {
  const std::int64_t block = 512, blocks = 5, n = block * blocks;
  const auto segments = segments_over(n, 21);
  State state{random_floats(n, 22), std::vector<float>(blocks, 0.0f), std::vector<float>(blocks, 0.0f),
              std::vector<std::int8_t>(n, 0), std::vector<std::uint8_t>(n, 0)};
  const auto grad = test::round_to_bf16(random_floats(n, 23));
  const std::vector<float> sentinel(n, 7.0f);
  DeviceBuffer<float> g_param(state.param), g_m_absmax(state.m_absmax), g_v_absmax(state.v_absmax);
  DeviceBuffer<std::int8_t> g_m_codes(state.m_codes);
  DeviceBuffer<std::uint8_t> g_v_codes(state.v_codes);
  DeviceBuffer<__nv_bfloat16> g_grad(test::to_bf16(grad)), g_copy(test::to_bf16(sentinel));
  DeviceBuffer<ParamSegment> g_segments(segments);
  detail::launch_adamw8bit(g_param.get(), g_grad.get(), g_m_codes.get(), g_m_absmax.get(), g_v_codes.get(),
                           g_v_absmax.get(), g_copy.get(), n, block, g_segments.get(),
                           static_cast<std::int64_t>(segments.size()), scalars(1, 0.0f), scalars(1, 0.1f), stream_);
  state = cpu_step(cpu_, state, grad, block, segments, 1);
  const auto master = g_param.download();
  expect_close(master, state.param, kF32Tolerance, "adamw8bit bf16 grad (n=2560,block=512) param (f32 master)");
  const auto copy = test::from_bf16(g_copy.download());
  std::vector<float> expected_copy = sentinel;  // written only where a segment updates the master
  for (const ParamSegment& s : segments) {
    for (std::int64_t i = s.begin; i < s.begin + s.count; ++i) expected_copy[i] = test::round_to_bf16({master[i]})[0];
  }
  test::expect_same_bits(copy, expected_copy, "adamw8bit bf16 grad (n=2560,block=512) bf16 write-back");
}

TEST_F(CudaAdamW8bit, RefusesARangeThatIsNotWholeBlocks) {
  DeviceBuffer<float> f(64);
  DeviceBuffer<std::int8_t> mq(64);
  DeviceBuffer<std::uint8_t> vq(64);
  const std::vector<ParamSegment> none;
  const AdamWScalars s;
  EXPECT_THROW(gpu_->adamw8bit_update(f.get(), f.get(), mq.get(), f.get(), vq.get(), f.get(), 60, 16, none, s, s),
               std::invalid_argument)
      << "n = 60 is not a multiple of block = 16";
  EXPECT_THROW(gpu_->adamw8bit_update(f.get(), f.get(), mq.get(), f.get(), vq.get(), f.get(), 64, 0, none, s, s),
               std::invalid_argument)
      << "block = 0";
  EXPECT_THROW(gpu_->adamw8bit_update(f.get(), f.get(), mq.get(), f.get(), vq.get(), f.get(), 2 * kMaxQuantBlock,
                                      2 * kMaxQuantBlock, none, s, s),
               std::invalid_argument)
      << "block above kMaxQuantBlock";
}

}  // namespace
}  // namespace tessera
