// TimedKernels: every op of the table is forwarded (the same bits as the inner table) and counted
// once, in its own group; times add up and reset to zero.
#include "tessera/runtime/timed_kernels.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"

namespace tessera {
namespace {

// Small buffers every op below can run on: n = 4 rows, c = 8 channels, oc = 8, attention b=1 t=4
// c=8 nh=2, vocabulary 8, targets 0..3.
struct Buffers {
  std::vector<float> a = std::vector<float>(64, 0.25f), b = std::vector<float>(64, 0.5f);
  std::vector<float> c = std::vector<float>(64, 0.0f), d = std::vector<float>(64, 0.0f);
  std::vector<float> w = std::vector<float>(64, 0.125f), bias = std::vector<float>(8, 0.1f);
  std::vector<float> qkv = std::vector<float>(96, 0.3f), dqkv = std::vector<float>(96, 0.0f);
  std::vector<float> probs = std::vector<float>(32, 0.0f), scratch = std::vector<float>(32, 0.0f);
  std::vector<float> stats = std::vector<float>(8, 1.0f), stats2 = std::vector<float>(8, 1.0f);
  std::vector<float> m = std::vector<float>(64, 0.0f), v = std::vector<float>(64, 0.0f);
  std::vector<std::int8_t> m8 = std::vector<std::int8_t>(64, 0);
  std::vector<std::uint8_t> v8 = std::vector<std::uint8_t>(64, 0);
  std::vector<float> absmax = std::vector<float>(2, 0.0f), absmax2 = std::vector<float>(2, 0.0f);
  std::vector<std::int32_t> tokens = {0, 1, 2, 3};
  std::vector<std::uint16_t> half = std::vector<std::uint16_t>(64, 0);
  double result = 0.0;
  std::int32_t flag = 0;
};

struct OpCase {
  std::string name;
  KernelGroup group;
  std::function<void(const Kernels&, Buffers&)> call;
};

std::vector<OpCase> every_op() {
  using G = KernelGroup;
  const AdamWScalars s{};
  const ParamSegment segment{0, 64, true};
  return {
      {"gemm", G::kGemm, [](const Kernels& k, Buffers& x) {
         k.gemm(false, true, 4, 8, 8, 1.0f, x.a.data(), 8, x.w.data(), 8, 0.0f, x.c.data(), 8); }},
      {"linear_forward", G::kGemm, [](const Kernels& k, Buffers& x) {
         k.linear_forward(x.c.data(), x.a.data(), x.w.data(), x.bias.data(), 4, 8, 8); }},
      {"linear_backward", G::kGemm, [](const Kernels& k, Buffers& x) {
         k.linear_backward(x.c.data(), x.d.data(), x.stats.data(), x.b.data(), x.a.data(), x.w.data(), 4, 8, 8); }},
      {"linear_gelu_forward", G::kGemm, [](const Kernels& k, Buffers& x) {
         k.linear_gelu_forward(x.c.data(), x.d.data(), x.a.data(), x.w.data(), x.bias.data(), 4, 8, 8); }},
      {"linear_gelu_backward", G::kGemm, [](const Kernels& k, Buffers& x) {
         k.linear_gelu_backward(x.c.data(), x.m.data(), x.stats.data(), x.b.data(), x.d.data(), x.a.data(),
                                x.w.data(), 4, 8, 8); }},
      {"embedding_forward", G::kElementwise, [](const Kernels& k, Buffers& x) {
         k.embedding_forward(x.c.data(), x.tokens.data(), x.w.data(), x.a.data(), 1, 4, 8, 8); }},
      {"embedding_backward", G::kElementwise, [](const Kernels& k, Buffers& x) {
         k.embedding_backward(x.m.data(), x.v.data(), x.b.data(), x.tokens.data(), 1, 4, 8, 8); }},
      {"layernorm_forward", G::kElementwise, [](const Kernels& k, Buffers& x) {
         k.layernorm_forward(x.c.data(), x.stats.data(), x.stats2.data(), x.a.data(), x.w.data(), x.bias.data(), 4, 8,
                             1e-5f); }},
      {"layernorm_backward", G::kElementwise, [](const Kernels& k, Buffers& x) {
         k.layernorm_backward(x.c.data(), x.m.data(), x.v.data(), x.b.data(), x.a.data(), x.w.data(), x.stats.data(),
                              x.stats2.data(), 4, 8); }},
      {"residual_layernorm_forward", G::kElementwise, [](const Kernels& k, Buffers& x) {
         k.residual_layernorm_forward(x.d.data(), x.c.data(), x.stats.data(), x.stats2.data(), x.a.data(), x.b.data(),
                                      x.w.data(), x.bias.data(), 4, 8, 1e-5f); }},
      {"residual_layernorm_backward", G::kElementwise, [](const Kernels& k, Buffers& x) {
         k.residual_layernorm_backward(x.c.data(), x.m.data(), x.v.data(), x.b.data(), x.a.data(), x.d.data(),
                                       x.w.data(), x.stats.data(), x.stats2.data(), 4, 8); }},
      {"attention_forward", G::kAttention, [](const Kernels& k, Buffers& x) {
         k.attention_forward(x.c.data(), x.probs.data(), x.qkv.data(), 1, 4, 8, 2); }},
      {"attention_backward", G::kAttention, [](const Kernels& k, Buffers& x) {
         k.attention_backward(x.dqkv.data(), x.scratch.data(), x.b.data(), x.qkv.data(), x.probs.data(), 1, 4, 8,
                              2); }},
      {"gelu_forward", G::kElementwise, [](const Kernels& k, Buffers& x) { k.gelu_forward(x.c.data(), x.a.data(), 64); }},
      {"gelu_backward", G::kElementwise, [](const Kernels& k, Buffers& x) {
         k.gelu_backward(x.c.data(), x.a.data(), x.b.data(), 64); }},
      {"add", G::kElementwise, [](const Kernels& k, Buffers& x) { k.add(x.c.data(), x.a.data(), x.b.data(), 64); }},
      {"scale", G::kOptimizer, [](const Kernels& k, Buffers& x) { k.scale(x.c.data(), 0.5f, 64); }},
      {"cross_entropy_forward", G::kLoss, [](const Kernels& k, Buffers& x) {
         k.cross_entropy_forward(x.stats.data(), x.stats2.data(), x.a.data(), x.tokens.data(), 4, 8); }},
      {"cross_entropy_backward", G::kLoss, [](const Kernels& k, Buffers& x) {
         k.cross_entropy_backward(x.c.data(), x.a.data(), x.stats2.data(), x.tokens.data(), 0.25f, 4, 8); }},
      {"sum", G::kLoss, [](const Kernels& k, Buffers& x) { k.sum(x.a.data(), 64, &x.result); }},
      {"sum_squares", G::kOptimizer, [](const Kernels& k, Buffers& x) { k.sum_squares(x.a.data(), 64, &x.result); }},
      {"has_non_finite", G::kOptimizer, [](const Kernels& k, Buffers& x) {
         k.has_non_finite(x.a.data(), 64, &x.flag); }},
      {"adamw_update", G::kOptimizer, [s](const Kernels& k, Buffers& x) {
         k.adamw_update(x.c.data(), x.a.data(), x.m.data(), x.v.data(), 64, s); }},
      {"adamw8bit_update", G::kOptimizer, [s, segment](const Kernels& k, Buffers& x) {
         k.adamw8bit_update(x.c.data(), x.a.data(), x.m8.data(), x.absmax.data(), x.v8.data(), x.absmax2.data(), 64,
                            32, std::span<const ParamSegment>(&segment, 1), s, s); }},
      {"convert", G::kConversion, [](const Kernels& k, Buffers& x) {
         k.convert(x.a.data(), DType::kF32, x.half.data(), DType::kBF16, 64); }},
  };
}

TEST(TimedKernels, EveryOpIsCountedOnceInItsGroupAndGivesTheInnerTablesBits) {
  CpuKernels cpu;
  TimedKernels timed(cpu);
  const std::vector<OpCase> ops = every_op();
  EXPECT_EQ(ops.size(), 25u) << "every op of the Kernels table has a case here";
  for (const OpCase& op : ops) {
    timed.reset();
    Buffers through_timed, direct;
    op.call(timed, through_timed);
    op.call(cpu, direct);
    const KernelTimes t = timed.times();
    for (KernelGroup g : kAllKernelGroups) {
      EXPECT_EQ(t.calls_of(g), g == op.group ? 1 : 0)
          << op.name << ": calls in group " << kernel_group_name(g) << " (expected in " << kernel_group_name(op.group)
          << ")";
      if (g != op.group) EXPECT_EQ(t.seconds_of(g), 0.0) << op.name << " in " << kernel_group_name(g);
    }
    EXPECT_GE(t.seconds_of(op.group), 0.0) << op.name;
    EXPECT_EQ(through_timed.c, direct.c) << op.name << ": output through TimedKernels differs from the CPU table";
    EXPECT_EQ(through_timed.d, direct.d) << op.name;
    EXPECT_EQ(through_timed.m, direct.m) << op.name;
    EXPECT_EQ(through_timed.dqkv, direct.dqkv) << op.name;
    EXPECT_EQ(through_timed.stats, direct.stats) << op.name;
    EXPECT_EQ(through_timed.half, direct.half) << op.name;
    EXPECT_EQ(through_timed.result, direct.result) << op.name;
  }
}

TEST(TimedKernels, TimesAccumulateUntilReset) {
  CpuKernels cpu;
  TimedKernels timed(cpu);
  Buffers x;
  for (int i = 0; i < 3; ++i) timed.add(x.c.data(), x.a.data(), x.b.data(), 64);
  timed.gemm(false, false, 8, 8, 8, 1.0f, x.a.data(), 8, x.b.data(), 8, 0.0f, x.c.data(), 8);
  KernelTimes t = timed.times();
  EXPECT_EQ(t.calls_of(KernelGroup::kElementwise), 3);
  EXPECT_EQ(t.calls_of(KernelGroup::kGemm), 1);
  EXPECT_GT(t.total_seconds(), 0.0);
  EXPECT_DOUBLE_EQ(t.total_seconds(), t.seconds_of(KernelGroup::kElementwise) + t.seconds_of(KernelGroup::kGemm));
  timed.reset();
  t = timed.times();
  EXPECT_EQ(t.total_seconds(), 0.0);
  for (KernelGroup g : kAllKernelGroups) EXPECT_EQ(t.calls_of(g), 0) << kernel_group_name(g);
}

}  // namespace
}  // namespace tessera
