// tiled_sgemm: fixed output tiles, one single-threaded OpenBLAS call each, spread over OpenMP threads.
#include "tessera/runtime/cpu/tiled_sgemm.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>

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
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (count == 1 || macs < kParallelMinMacs || omp_in_parallel()) {
    for (std::int64_t tile = 0; tile < count; ++tile) run_tile(tile);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t tile = 0; tile < count; ++tile) run_tile(tile);
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS::detail
