// tiled_sgemm: the tiles follow the shape alone (512 x 512, halved down to 64 while a product would
// have fewer than 4), and the tiled product equals a double-precision reference within the f32
// tolerance in every transpose combination, on shapes that leave partial tiles.
// tessera-test-unity: off (a CPU kernel level's internals: its detail namespace meets tessera's)
#include "tessera/runtime/cpu/tiled_sgemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tessera/core/random.hpp"

namespace tessera::detail {
namespace {

TEST(TiledSgemm, TilesFollowTheShape) {
  EXPECT_EQ(gemm_tile(1024, 1536).rows, 512);
  EXPECT_EQ(gemm_tile(1024, 1536).cols, 512);
  const GemmTile square = gemm_tile(256, 256);  // halved until 4 tiles
  EXPECT_EQ(square.rows * square.cols, 128 * 128);
  const GemmTile tall = gemm_tile(4096, 40);  // 8 row tiles already
  EXPECT_EQ(tall.rows, 512);
  const GemmTile tiny = gemm_tile(10, 10);  // no smaller than 64
  EXPECT_EQ(tiny.rows, 64);
  EXPECT_EQ(tiny.cols, 64);
}

TEST(TiledSgemm, MatchesADoubleReference) {
  Rng rng(5);
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const std::int64_t m = 301, n = 517, k = 129;
      std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)),
          c(static_cast<std::size_t>(m * n), 1.0f);
      for (float& x : a) x = static_cast<float>(rng.uniform() - 0.5);
      for (float& x : b) x = static_cast<float>(rng.uniform() - 0.5);
      const std::int64_t lda = ta ? m : k, ldb = tb ? k : n;
      tiled_sgemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), n);
      for (std::int64_t i = 0; i < m; i += 37) {
        for (std::int64_t j = 0; j < n; j += 41) {
          double sum = 0;
          for (std::int64_t p = 0; p < k; ++p) {
            sum += static_cast<double>(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
          }
          EXPECT_NEAR(c[i * n + j], 0.5 * sum + 2.0, 1e-4) << "ta " << ta << " tb " << tb << " at " << i << "," << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::detail
