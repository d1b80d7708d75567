// tiled_sgemm: a row-major sgemm whose bits do not depend on the thread count. C is cut into output
// tiles (gemm_tile: kGemmTileRows x kGemmTileCols, no larger than C, the larger side halved down to
// kGemmMinTile while C would have fewer than kGemmMinTiles of them; the last ones smaller), each
// tile is one single-threaded
// OpenBLAS call over the whole inner dimension, and the tiles are spread over the OpenMP threads.
// Which tiles exist depends on (m, n) only, so every element of C is computed by the same call,
// with the same inner-dimension order, at every thread count.
//
// Why not OpenBLAS's own threads: its threaded driver blocks the inner dimension differently from
// its single-threaded one, and picks between them by product size and thread count, so a GEMM with
// k above one block (a few hundred) rounded differently at 1 and 2 threads. Its OpenMP build
// threads a call made outside a parallel region over omp_get_max_threads() threads (whatever
// openblas_set_num_threads said), so a tile called there sets that count to 1 for the call.
#pragma once

#include "tessera/runtime/cpu/kernel_level_namespace.hpp"

#include <cstdint>

#include "tessera/precision/bf16.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS::detail {

inline constexpr std::int64_t kGemmTileRows = 512;
inline constexpr std::int64_t kGemmTileCols = 512;
inline constexpr std::int64_t kGemmMinTile = 64;
inline constexpr std::int64_t kGemmMinTiles = 4;  // so a small product still feeds a few threads

struct GemmTile {
  std::int64_t rows, cols;
};
// The output tile of an (m, n) product: a function of the shape alone.
GemmTile gemm_tile(std::int64_t m, std::int64_t n);

// c (m,n; row stride ldc) = alpha * op(a) op(b) + beta * c, with op(a) (m,k) and op(b) (k,n) read
// transposed when trans_a / trans_b. Inside a parallel region, or below a size where starting
// threads costs more than it saves, the tiles run on the calling thread (the same tiles, so the same
// bits). m, n, k, lda, ldb, ldc must fit OpenBLAS's int (the caller checks).
void tiled_sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                 std::int64_t ldc);

// The same product on bf16 matrices: the same output tiles, and per tile the inner dimension in
// blocks of kGemmInnerBlock whose panels of op(a) and op(b) are widened to f32 on the thread (exact)
// and multiplied by the same single-threaded sgemm into an f32 tile (beta * c widened first), which
// is rounded to c once at the end. The bits depend on (m, n, k) only, as tiled_sgemm's.
inline constexpr std::int64_t kGemmInnerBlock = 256;
void tiled_gemm_bf16(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                     const Bf16* a, std::int64_t lda, const Bf16* b, std::int64_t ldb, float beta, Bf16* c,
                     std::int64_t ldc);

}  // namespace tessera::TESSERA_CPU_LEVEL_NS::detail
