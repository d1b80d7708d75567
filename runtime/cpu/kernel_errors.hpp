// The CPU kernels' error messages, built outside the per-level code: the string functions they use
// are then compiled once, for the portable level, and no copy built for AVX2 or AVX-512 can stand
// in for them elsewhere in the program.
#pragma once

#include <cstdint>

#include "tessera/precision/dtype.hpp"

namespace tessera {

// std::invalid_argument: a GEMM dimension or stride that does not fit a 32-bit BLAS int.
[[noreturn]] void throw_blas_int(const char* what, std::int64_t value);
// std::invalid_argument: n elements that do not split into 8-bit optimizer blocks of `block`.
[[noreturn]] void throw_quant_blocks(std::int64_t n, std::int64_t block);
// std::out_of_range: element i of targets (`what` "target") or tokens ("token") outside [0, v).
[[noreturn]] void throw_id_outside(const char* where, const char* what, std::int64_t i, std::int32_t id, std::int64_t v,
                                   const char* table);
// std::invalid_argument: a vocabulary shard [first, first + rows) that is not inside [0, vocab).
[[noreturn]] void throw_bad_shard(const char* where, std::int64_t first, std::int64_t rows, std::int64_t vocab);
// Refuses (throw_bad_shard) vocabulary rows or columns [first, first + rows) outside [0, vocab): the
// check every backend's vocabulary-sharded op makes before it reads or writes anything.
inline void check_vocab_shard(const char* where, std::int64_t first, std::int64_t rows, std::int64_t vocab) {
  if (first < 0 || rows < 0 || first > vocab - rows) throw_bad_shard(where, first, rows, vocab);
}
// std::invalid_argument: a cross-entropy combine given fewer than one lse part per row.
[[noreturn]] void throw_no_lse_parts(const char* where, std::int64_t parts);
// std::invalid_argument: a conversion between dtypes that are not both floating.
[[noreturn]] void throw_convert(DType from, DType to);

}  // namespace tessera
