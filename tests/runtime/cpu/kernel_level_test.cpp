// CPU kernel levels: every level this CPU runs against the portable level on the same inputs —
// bit for bit where both levels do the same arithmetic in the same order (copies, adds, scaling,
// conversions, embeddings, sums, the cross-entropy losses), within a tight relative tolerance where
// a level fuses multiply-adds (madd is an FMA at avx2 and avx512: GELU, the softmax gradients,
// AdamW, 8-bit AdamW) or sums in vectors of its own width (LayerNorm's row statistics, attention).
// The two fusing levels agree bit for bit on the ops that differ from portable by FMA alone —
// 8-bit AdamW included, whose avx512 codes come from VBMI lookups and avx2's from element loops. A
// level the CPU lacks skips, saying so. Also: the level names, TESSERA_CPU_KERNELS (a named level is used; an
// unknown name or a level the CPU lacks is refused naming the variable, the value and the levels
// this CPU has), and the device's level.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/runtime/cpu/cpu_device.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/cpu/kernel_level.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::random_floats;

// FMA against the double-precision fallback, or another summation order, in f32 results of O(1).
constexpr double kRelTol = 2e-5;

bool cpu_runs(CpuKernelLevel level) {
  const auto levels = supported_cpu_kernel_levels();
  return std::find(levels.begin(), levels.end(), level) != levels.end();
}

std::string runs_list() {
  std::string out;
  for (CpuKernelLevel l : supported_cpu_kernel_levels()) out.append(" ").append(cpu_kernel_level_name(l));
  return out;
}

// The outputs of one computation as floats (doubles and integers converted exactly enough to compare).
using Outputs = std::vector<std::vector<float>>;
using Compute = std::function<Outputs(const Kernels&)>;

void compare(const Outputs& expected, const Outputs& actual, double rel_tol, const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t o = 0; o < expected.size(); ++o) {
    ASSERT_EQ(expected[o].size(), actual[o].size());
    double scale = 0.0;
    for (float x : expected[o]) scale = std::max(scale, std::abs(static_cast<double>(x)));
    std::size_t wrong = 0, first = 0;
    for (std::size_t i = 0; i < expected[o].size(); ++i) {
      const float e = expected[o][i], a = actual[o][i];
      const bool ok = rel_tol == 0.0 ? std::memcmp(&e, &a, sizeof e) == 0
                                     : std::abs(static_cast<double>(a) - e) <= rel_tol * std::max(1.0, scale);
      if (!ok && wrong++ == 0) first = i;
    }
    EXPECT_EQ(wrong, 0u) << what << ": output " << o << " has " << wrong << " of " << expected[o].size()
                         << " elements off (tolerance " << rel_tol << "), first at " << first << ": portable "
                         << expected[o][first] << ", level " << actual[o][first];
  }
}

class KernelLevelTest : public ::testing::TestWithParam<CpuKernelLevel> {
 protected:
  void SetUp() override {
    if (!cpu_runs(GetParam())) {
      GTEST_SKIP() << "this CPU lacks the " << cpu_kernel_level_name(GetParam()) << " level (it runs:" << runs_list()
                   << ")";
    }
  }
  // Runs `compute` at the portable level and at this level, and compares.
  void check(const char* what, double rel_tol, const Compute& compute) {
    const CpuKernels portable(CpuKernelLevel::kPortable), level(GetParam());
    compare(compute(portable), compute(level), rel_tol, std::string(what) + " at " + cpu_kernel_level_name(GetParam()));
  }
};

constexpr std::int64_t kN = 4099;  // not a multiple of any vector width

TEST_P(KernelLevelTest, ElementwiseAddScaleExact) {
  const auto a = random_floats(kN, 1), b = random_floats(kN, 2);
  check("add, scale", 0.0, [&](const Kernels& k) {
    std::vector<float> out(kN), x = a;
    k.add(out.data(), a.data(), b.data(), kN);
    k.scale(x.data(), 0.37f, kN);
    return Outputs{out, x};
  });
}

TEST_P(KernelLevelTest, GeluWithinTolerance) {
  const auto x = random_floats(kN, 3, -6.0f, 6.0f), dy = random_floats(kN, 4);
  check("gelu", kRelTol, [&](const Kernels& k) {
    std::vector<float> y(kN), dx(kN);
    k.gelu_forward(y.data(), x.data(), kN);
    k.gelu_backward(dx.data(), x.data(), dy.data(), kN);
    return Outputs{y, dx};
  });
}

TEST_P(KernelLevelTest, ConvertExact) {
  const auto x = random_floats(kN, 5, -1e4f, 1e4f);
  check("convert", 0.0, [&](const Kernels& k) {
    std::vector<std::uint16_t> bf(kN), h(kN);
    std::vector<float> from_bf(kN), from_h(kN);
    k.convert(x.data(), DType::kF32, bf.data(), DType::kBF16, kN);
    k.convert(x.data(), DType::kF32, h.data(), DType::kF16, kN);
    k.convert(bf.data(), DType::kBF16, from_bf.data(), DType::kF32, kN);
    k.convert(h.data(), DType::kF16, from_h.data(), DType::kF32, kN);
    return Outputs{from_bf, from_h};
  });
}

TEST_P(KernelLevelTest, LayerNormWithinTolerance) {
  const std::int64_t n = 37, c = 771;
  const auto a = random_floats(n * c, 6), b = random_floats(n * c, 7), w = random_floats(c, 8),
             bias = random_floats(c, 9), dout = random_floats(n * c, 10);
  check("layernorm", kRelTol, [&](const Kernels& k) {
    std::vector<float> sum(n * c), out(n * c), mean(n), rstd(n), dinp(n * c), dw(c, 0.0f), db(c, 0.0f);
    k.residual_layernorm_forward(sum.data(), out.data(), mean.data(), rstd.data(), a.data(), b.data(), w.data(),
                                 bias.data(), n, c, 1e-5f);
    k.layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), sum.data(), w.data(), mean.data(),
                         rstd.data(), n, c);
    return Outputs{sum, out, mean, rstd, dinp, dw, db};
  });
}

TEST_P(KernelLevelTest, AttentionWithinTolerance) {
  const std::int64_t b = 2, t = 67, c = 48, nh = 3;
  const auto qkv = random_floats(b * t * 3 * c, 11), dout = random_floats(b * t * c, 12);
  check("attention", kRelTol, [&](const Kernels& k) {
    std::vector<float> out(b * t * c), lse(b * nh * t), dqkv(b * t * 3 * c), delta(b * nh * t);
    k.attention_forward(out.data(), lse.data(), qkv.data(), b, t, c, nh, nullptr);
    k.attention_backward(dqkv.data(), delta.data(), dout.data(), qkv.data(), out.data(), lse.data(), b, t, c, nh,
                         nullptr);
    return Outputs{out, lse, dqkv};
  });
}

TEST_P(KernelLevelTest, CrossEntropyLossExactGradientWithinTolerance) {
  const std::int64_t n = 19, v = 5003;
  const auto logits = random_floats(n * v, 13, -8.0f, 8.0f);
  std::vector<std::int32_t> targets(n);
  for (std::int64_t i = 0; i < n; ++i) targets[i] = static_cast<std::int32_t>((i * 977) % v);
  check("cross_entropy_forward", 0.0, [&](const Kernels& k) {
    std::vector<float> losses(n), lse(n);
    k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v);
    return Outputs{losses, lse};
  });
  check("cross_entropy_backward", kRelTol, [&](const Kernels& k) {
    std::vector<float> losses(n), lse(n), dlogits(n * v);
    k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v);
    k.cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), 1.0f / n, n, v);
    return Outputs{dlogits};
  });
}

TEST_P(KernelLevelTest, EmbeddingExact) {
  const std::int64_t b = 3, t = 17, c = 101, v = 29;
  const auto wte = random_floats(v * c, 14), wpe = random_floats(t * c, 15), dout = random_floats(b * t * c, 16);
  std::vector<std::int32_t> tokens(b * t);
  for (std::int64_t i = 0; i < b * t; ++i) tokens[i] = static_cast<std::int32_t>((i * 7) % v);
  check("embedding", 0.0, [&](const Kernels& k) {
    std::vector<float> out(b * t * c), dwte(v * c, 0.0f), dwpe(t * c, 0.0f);
    k.embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), b, t, c, v);
    k.embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), b, t, c, v);
    return Outputs{out, dwte, dwpe};
  });
}

TEST_P(KernelLevelTest, ReductionsExact) {
  const auto x = random_floats(kN, 17), y = random_floats(kN, 18);
  check("sum, sum_squares, add_sum_squares, has_non_finite", 0.0, [&](const Kernels& k) {
    double s = 0.0, sq = 0.0, asq = 0.0;
    std::int32_t finite = -1, non_finite = -1;
    std::vector<float> out(kN), bad = x;
    bad[kN - 3] = std::numeric_limits<float>::quiet_NaN();
    k.sum(x.data(), kN, &s);
    k.sum_squares(x.data(), kN, &sq);
    k.add_sum_squares(out.data(), x.data(), y.data(), kN, &asq);
    k.has_non_finite(x.data(), kN, &finite);
    k.has_non_finite(bad.data(), kN, &non_finite);
    // Doubles as two floats: the high part and the rest, so a difference in any bit shows.
    auto split = [](double d) { const float hi = static_cast<float>(d); return std::vector<float>{hi, static_cast<float>(d - hi)}; };
    return Outputs{split(s), split(sq), split(asq), out, {static_cast<float>(finite), static_cast<float>(non_finite)}};
  });
}

AdamWScalars adamw_scalars(float weight_decay) {
  AdamWScalars s;
  s.lr = 1e-3f;
  s.weight_decay = weight_decay;
  s.bias_correction1 = 1.0f - 0.9f * 0.9f;
  s.bias_correction2 = 1.0f - 0.95f * 0.95f;
  s.grad_scale = 0.5f;
  return s;
}

TEST_P(KernelLevelTest, AdamWWithinTolerance) {
  const auto p0 = random_floats(kN, 19), g = random_floats(kN, 20), m0 = random_floats(kN, 21, -0.1f, 0.1f),
             v0 = random_floats(kN, 22, 0.0f, 0.01f);
  check("adamw_update", kRelTol, [&](const Kernels& k) {
    std::vector<float> p = p0, m = m0, v = v0;
    k.adamw_update(p.data(), g.data(), m.data(), v.data(), kN, adamw_scalars(0.1f));
    return Outputs{p, m, v};
  });
}

// The codes too: the tolerance is far below one code step.
TEST_P(KernelLevelTest, AdamW8bitWithinTolerance) {
  const std::int64_t block = 256, n = 16 * block;
  const auto p0 = random_floats(n, 23), g = random_floats(n, 24);
  const std::vector<ParamSegment> segments{{0, n / 2, false}, {n / 2, n / 2, true}};
  check("adamw8bit_update", kRelTol, [&](const Kernels& k) {
    std::vector<float> p = p0, m_absmax(n / block, 0.0f), v_absmax(n / block, 0.0f);
    std::vector<std::int8_t> m_codes(n, 0);
    std::vector<std::uint8_t> v_codes(n, 0);
    for (int step = 0; step < 3; ++step) {
      k.adamw8bit_update(p.data(), g.data(), m_codes.data(), m_absmax.data(), v_codes.data(), v_absmax.data(), n,
                         block, segments, adamw_scalars(0.0f), adamw_scalars(0.1f));
    }
    std::vector<float> codes(2 * n);
    for (std::int64_t i = 0; i < n; ++i) {
      codes[i] = m_codes[i];
      codes[n + i] = v_codes[i];
    }
    return Outputs{p, m_absmax, v_absmax, codes};
  });
}

TEST_P(KernelLevelTest, HostCopiesExact) {
  const std::size_t bytes = (std::size_t{3} << 20) + 13;  // past the parallel split, odd tail
  std::vector<unsigned char> src(bytes + 1);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  const CpuLevelFunctions& f = cpu_level_functions(GetParam());
  std::vector<unsigned char> dst(bytes + 1, 0), zero(bytes + 1, 0xAB);
  f.parallel_stream_copy(dst.data() + 1, src.data() + 1, bytes);  // unaligned
  f.stream_copy(dst.data(), src.data(), 1);
  EXPECT_EQ(dst, src);
  f.parallel_stream_zero(zero.data() + 1, bytes);
  EXPECT_EQ(zero[0], 0xAB);
  EXPECT_EQ(std::count(zero.begin() + 1, zero.end(), 0), static_cast<std::ptrdiff_t>(bytes));
}

INSTANTIATE_TEST_SUITE_P(Levels, KernelLevelTest,
                         ::testing::Values(CpuKernelLevel::kAvx512, CpuKernelLevel::kAvx2, CpuKernelLevel::kPortable),
                         [](const auto& info) { return std::string(cpu_kernel_level_name(info.param)); });

// avx512 against avx2: both fuse madd, so the ops whose only difference from portable is FMA agree.
TEST(KernelLevel, FusingLevelsAgreeOnGeluSoftmaxGradientAndAdamW) {
  if (!cpu_runs(CpuKernelLevel::kAvx512) || !cpu_runs(CpuKernelLevel::kAvx2)) {
    GTEST_SKIP() << "needs avx512 and avx2; this CPU runs:" << runs_list();
  }
  const CpuKernels avx512(CpuKernelLevel::kAvx512), avx2(CpuKernelLevel::kAvx2);
  const std::int64_t n = 7, v = 3001;
  const auto x = random_floats(kN, 25, -6.0f, 6.0f), dy = random_floats(kN, 26), logits = random_floats(n * v, 27);
  const std::vector<std::int32_t> targets{0, 5, 17, 3000, 2, 1, 999};
  const std::int64_t block = 512, q = 64 * block;  // 8-bit AdamW: many blocks, so many codes
  const auto p0 = random_floats(q, 28), g = random_floats(q, 29);
  const std::vector<ParamSegment> segments{{0, q, true}};
  const Compute compute = [&](const Kernels& k) {
    std::vector<float> y(kN), dx(kN), losses(n), lse(n), dlogits(n * v), p = p0, m(q, 0.0f), vv(q, 0.0f);
    k.gelu_forward(y.data(), x.data(), kN);
    k.gelu_backward(dx.data(), x.data(), dy.data(), kN);
    k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v);
    k.cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), 1.0f, n, v);
    k.adamw_update(p.data(), g.data(), m.data(), vv.data(), q, adamw_scalars(0.1f));
    std::vector<float> p8 = p0, m_absmax(q / block, 0.0f), v_absmax(q / block, 0.0f), codes(2 * q);
    std::vector<std::int8_t> m_codes(q, 0);
    std::vector<std::uint8_t> v_codes(q, 0);
    for (int step = 0; step < 3; ++step) {
      k.adamw8bit_update(p8.data(), g.data(), m_codes.data(), m_absmax.data(), v_codes.data(), v_absmax.data(), q,
                         block, segments, adamw_scalars(0.0f), adamw_scalars(0.1f));
    }
    for (std::int64_t i = 0; i < q; ++i) {
      codes[i] = m_codes[i];
      codes[q + i] = v_codes[i];
    }
    return Outputs{y, dx, dlogits, p, m, vv, p8, m_absmax, v_absmax, codes};
  };
  compare(compute(avx2), compute(avx512), 0.0, "gelu, cross_entropy_backward, adamw, adamw8bit: avx512 against avx2");
}

TEST(KernelLevel, NamesAndBuiltLevels) {
  EXPECT_STREQ(cpu_kernel_level_name(CpuKernelLevel::kAvx512), "avx512");
  EXPECT_STREQ(cpu_kernel_level_name(CpuKernelLevel::kAvx2), "avx2");
  EXPECT_STREQ(cpu_kernel_level_name(CpuKernelLevel::kPortable), "portable");
  const auto supported = supported_cpu_kernel_levels();
  ASSERT_FALSE(supported.empty());
  EXPECT_EQ(supported.back(), CpuKernelLevel::kPortable);  // every CPU runs the portable level
#if defined(__x86_64__)
  EXPECT_EQ(built_cpu_kernel_levels().size(), 3u);
#endif
  EXPECT_EQ(choose_cpu_kernel_level(nullptr), supported.front());
  EXPECT_EQ(choose_cpu_kernel_level(""), supported.front());
  for (CpuKernelLevel l : supported) EXPECT_EQ(choose_cpu_kernel_level(cpu_kernel_level_name(l)), l);
}

std::string refusal(const char* value) {
  try {
    choose_cpu_kernel_level(value);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(KernelLevel, UnknownNameIsRefusedNamingVariableValueAndLevels) {
  const std::string message = refusal("avx1024");
  EXPECT_NE(message.find("TESSERA_CPU_KERNELS=avx1024"), std::string::npos) << message;
  EXPECT_NE(message.find("avx512, avx2, portable"), std::string::npos) << message;
  EXPECT_NE(message.find(std::string("this CPU runs: ") + cpu_kernel_level_name(supported_cpu_kernel_levels().front())),
            std::string::npos)
      << message;
  EXPECT_NE(refusal("AVX2"), "(accepted)");  // names are lower case
}

TEST(KernelLevel, LevelTheCpuLacksIsRefused) {
  for (CpuKernelLevel level : {CpuKernelLevel::kAvx512, CpuKernelLevel::kAvx2}) {
    if (cpu_runs(level)) continue;
    const std::string message = refusal(cpu_kernel_level_name(level));
    EXPECT_NE(message.find(std::string("TESSERA_CPU_KERNELS=") + cpu_kernel_level_name(level)), std::string::npos);
    EXPECT_NE(message.find("this CPU runs: "), std::string::npos) << message;
    return;
  }
  GTEST_SKIP() << "this CPU runs every level (" << runs_list() << "), so none can be refused for lacking it";
}

// In a child process (the level is chosen once per process): the device's level under
// TESSERA_CPU_KERNELS=value, or the refusal's message.
std::string device_level_in_child(const char* value) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    setenv(kCpuKernelsEnv, value, 1);
    std::string text;
    try {
      CpuDevice device;
      text = std::string("level ") + cpu_kernel_level_name(static_cast<const CpuKernels&>(device.kernels()).level()) +
             " / " + kernel_level_name();
    } catch (const std::invalid_argument& e) {
      text = e.what();
    }
    (void)!write(fds[1], text.data(), text.size());
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[512];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(got));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return text;
}

TEST(KernelLevel, EnvironmentChoosesTheDeviceLevel) {
  EXPECT_EQ(device_level_in_child("portable"), "level portable / portable");
  const std::string best = cpu_kernel_level_name(supported_cpu_kernel_levels().front());
  EXPECT_EQ(device_level_in_child(""), "level " + best + " / " + best);
  const std::string refused = device_level_in_child("fast");
  EXPECT_NE(refused.find("TESSERA_CPU_KERNELS=fast: unknown level"), std::string::npos) << refused;
}

}  // namespace
}  // namespace tessera
