// tiled_sgemm and tiled_gemm_bf16: fixed output tiles, single-threaded OpenBLAS calls each, spread
// over OpenMP threads.
#include "tessera/runtime/cpu/tiled_sgemm.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <vector>

namespace tessera::inline TESSERA_CPU_LEVEL_NS::detail {
namespace {

// Below this many multiply-adds the tiles run on the calling thread: starting the team costs more.
constexpr double kParallelMinMacs = 1 << 18;

std::int64_t tiles(std::int64_t extent, std::int64_t tile) { return (extent + tile - 1) / tile; }

// One single-threaded OpenBLAS call. Inside an active parallel region OpenBLAS runs on the calling
// thread by itself; outside one, its OpenMP build would use this thread's OpenMP count, so the count
// is 1 for the call (two stores, no team started).
void sgemm_on_this_thread(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                          std::int64_t ldc) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads != 1) omp_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
  if (threads != 1) omp_set_num_threads(threads);
}

// Runs run_tile(tile) for every output tile of an (m, n, k) product: on the calling thread when the
// product is small or already inside a parallel region, else spread over the OpenMP threads.
template <typename RunTile>
void for_each_tile(std::int64_t count, std::int64_t m, std::int64_t n, std::int64_t k, RunTile&& run_tile) {
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (count == 1 || macs < kParallelMinMacs || omp_in_parallel()) {
    for (std::int64_t tile = 0; tile < count; ++tile) run_tile(tile);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t tile = 0; tile < count; ++tile) run_tile(tile);
}

// dst (rows x cols, row stride cols) = the block of src (row stride ld) at (r0, c0), widened.
void widen_block(float* dst, const Bf16* src, std::int64_t ld, std::int64_t r0, std::int64_t c0, std::int64_t rows,
                 std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const Bf16* in = src + (r0 + r) * ld + c0;
    float* out = dst + r * cols;
#pragma omp simd
    for (std::int64_t j = 0; j < cols; ++j) out[j] = to_f32(in[j]);
  }
}

// A thread's f32 panels and tile for tiled_gemm_bf16 (grown once, then reused).
struct Bf16GemmScratch {
  std::vector<float> a, b, c;
};

Bf16GemmScratch& bf16_gemm_scratch() {
  thread_local Bf16GemmScratch scratch;
  return scratch;
}

}  // namespace

GemmTile gemm_tile(std::int64_t m, std::int64_t n) {
  // No larger than the product (in whole kGemmMinTile steps), then the larger side halved while the
  // product would have fewer than kGemmMinTiles tiles.
  const auto fit = [](std::int64_t tile, std::int64_t extent) {
    return std::min(tile, std::max(kGemmMinTile, tiles(extent, kGemmMinTile) * kGemmMinTile));
  };
  GemmTile tile{fit(kGemmTileRows, m), fit(kGemmTileCols, n)};
  while (tiles(m, tile.rows) * tiles(n, tile.cols) < kGemmMinTiles &&
         (tile.rows > kGemmMinTile || tile.cols > kGemmMinTile)) {
    std::int64_t& side = tile.rows >= tile.cols ? tile.rows : tile.cols;
    side = std::max(kGemmMinTile, side / 2);
  }
  return tile;
}

void tiled_sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                 std::int64_t ldc) {
  const GemmTile size = gemm_tile(m, n);
  const std::int64_t row_tiles = tiles(m, size.rows), col_tiles = tiles(n, size.cols);
  const std::int64_t count = row_tiles * col_tiles;
  auto run_tile = [&](std::int64_t tile) {
    const std::int64_t i0 = tile / col_tiles * size.rows, j0 = tile % col_tiles * size.cols;
    const std::int64_t rows = m - i0 < size.rows ? m - i0 : size.rows;
    const std::int64_t cols = n - j0 < size.cols ? n - j0 : size.cols;
    const float* a_rows = trans_a ? a + i0 : a + i0 * lda;  // op(a) rows [i0, i0 + rows)
    const float* b_cols = trans_b ? b + j0 * ldb : b + j0;  // op(b) columns [j0, j0 + cols)
    sgemm_on_this_thread(trans_a, trans_b, rows, cols, k, alpha, a_rows, lda, b_cols, ldb, beta, c + i0 * ldc + j0,
                         ldc);
  };
  for_each_tile(count, m, n, k, run_tile);
}

void tiled_gemm_bf16(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                     const Bf16* a, std::int64_t lda, const Bf16* b, std::int64_t ldb, float beta, Bf16* c,
                     std::int64_t ldc) {
  const GemmTile size = gemm_tile(m, n);
  const std::int64_t row_tiles = tiles(m, size.rows), col_tiles = tiles(n, size.cols);
  auto run_tile = [&](std::int64_t tile) {
    const std::int64_t i0 = tile / col_tiles * size.rows, j0 = tile % col_tiles * size.cols;
    const std::int64_t rows = m - i0 < size.rows ? m - i0 : size.rows;
    const std::int64_t cols = n - j0 < size.cols ? n - j0 : size.cols;
    const std::int64_t inner = std::min(k, kGemmInnerBlock);
    Bf16GemmScratch& w = bf16_gemm_scratch();
    w.a.resize(static_cast<std::size_t>(rows * inner));
    w.b.resize(static_cast<std::size_t>(inner * cols));
    w.c.resize(static_cast<std::size_t>(rows * cols));
    float* ct = w.c.data();
    if (beta == 0.0f) {
      std::fill(ct, ct + rows * cols, 0.0f);
    } else {
      widen_block(ct, c, ldc, i0, j0, rows, cols);
    }
    for (std::int64_t p0 = 0; p0 < k; p0 += kGemmInnerBlock) {
      const std::int64_t depth = std::min(kGemmInnerBlock, k - p0);
      // op(a) rows [i0, i0 + rows) x inner [p0, p0 + depth), stored as a is: (depth x rows) when transposed.
      if (trans_a) {
        widen_block(w.a.data(), a, lda, p0, i0, depth, rows);
      } else {
        widen_block(w.a.data(), a, lda, i0, p0, rows, depth);
      }
      // op(b) inner [p0, p0 + depth) x columns [j0, j0 + cols): (cols x depth) when transposed.
      if (trans_b) {
        widen_block(w.b.data(), b, ldb, j0, p0, cols, depth);
      } else {
        widen_block(w.b.data(), b, ldb, p0, j0, depth, cols);
      }
      sgemm_on_this_thread(trans_a, trans_b, rows, cols, depth, alpha, w.a.data(), trans_a ? rows : depth, w.b.data(),
                           trans_b ? depth : cols, p0 == 0 ? beta : 1.0f, ct, cols);
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      Bf16* out = c + (i0 + r) * ldc + j0;
      const float* in = ct + r * cols;
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) out[j] = from_f32<Bf16>(in[j]);
    }
  };
  for_each_tile(row_tiles * col_tiles, m, n, k, run_tile);
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS::detail
