// Deterministic column sums over the rows of an (n,c) matrix, for parameter gradients (bias, the
// layernorm weight and bias): out_k[j] += sum over rows i of value_k(i, j), for K outputs at once.
//
// Rows are cut into `groups` equal row groups (a number that depends on n, c and the scratch size
// only). Pass 1: block (column slice of 32, group) sums its rows, 8 thread rows each taking every
// 8th row in order, then the 8 partials in order, into scratch (K, groups, c). Pass 2: one thread
// per column adds the group partials in group order and accumulates into out. No atomics: the same
// bits every run.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"

namespace tessera::detail {

inline constexpr int kColumnSlice = 32;      // columns per block, one per lane
inline constexpr int kColumnThreadRows = 8;  // thread rows per block
inline constexpr std::int64_t kRowsPerGroup = 256;
inline constexpr std::int64_t kMaxRowGroups = 64;

inline std::int64_t column_row_groups(std::int64_t n, std::int64_t c, int outputs, std::size_t scratch_floats) {
  std::int64_t groups = (n + kRowsPerGroup - 1) / kRowsPerGroup;
  groups = groups < kMaxRowGroups ? groups : kMaxRowGroups;
  const auto fit = static_cast<std::int64_t>(scratch_floats / static_cast<std::size_t>(c * outputs));
  groups = groups < fit ? groups : fit;
  if (groups < 1) {
    throw std::invalid_argument("column sum over " + std::to_string(c) + " columns needs " +
                                std::to_string(c * outputs) + " floats of scratch, " + std::to_string(scratch_floats) +
                                " given; enlarge the CUDA kernels' workspace");
  }
  return groups;
}

template <int K, typename T>
struct ColumnOutputs {
  T* out[K];
};

// values(i, j, v) writes the K values of row i, column j into v.
template <int K, typename Values>
__global__ void column_partial_kernel(Values values, std::int64_t n, std::int64_t c, std::int64_t rows_per_group,
                                      std::int64_t groups, float* partial) {
  __shared__ float shared[K][kColumnThreadRows][kColumnSlice + 1];
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kColumnSlice + threadIdx.x;
  const std::int64_t g = blockIdx.y;
  const std::int64_t row0 = g * rows_per_group;
  const std::int64_t row1 = row0 + rows_per_group < n ? row0 + rows_per_group : n;
  float acc[K];
  for (int k = 0; k < K; ++k) acc[k] = 0.0f;
  if (j < c) {
    float v[K];
    for (std::int64_t i = row0 + threadIdx.y; i < row1; i += kColumnThreadRows) {
      values(i, j, v);
      for (int k = 0; k < K; ++k) acc[k] += v[k];
    }
  }
  for (int k = 0; k < K; ++k) shared[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && j < c) {
    for (int k = 0; k < K; ++k) {
      float total = shared[k][0][threadIdx.x];
      for (int r = 1; r < kColumnThreadRows; ++r) total += shared[k][r][threadIdx.x];
      partial[(k * groups + g) * c + j] = total;
    }
  }
}

template <int K, typename T>
__global__ void column_finish_kernel(const float* partial, std::int64_t groups, std::int64_t c,
                                     ColumnOutputs<K, T> outputs) {
  for (std::int64_t j = grid_start(); j < c; j += grid_stride()) {
    for (int k = 0; k < K; ++k) {
      float total = partial[(k * groups) * c + j];
      for (std::int64_t g = 1; g < groups; ++g) total += partial[(k * groups + g) * c + j];
      outputs.out[k][j] = from_f32<T>(to_f32(outputs.out[k][j]) + total);
    }
  }
}

// out_k[j] += sum_i value_k(i, j) over (n,c); scratch holds scratch_floats floats.
template <int K, typename T, typename Values>
void column_sums(ColumnOutputs<K, T> outputs, Values values, std::int64_t n, std::int64_t c, float* scratch,
                 std::size_t scratch_floats, cudaStream_t stream) {
  if (n <= 0 || c <= 0) return;
  const std::int64_t groups = column_row_groups(n, c, K, scratch_floats);
  const std::int64_t rows_per_group = (n + groups - 1) / groups;
  const dim3 grid(static_cast<unsigned>((c + kColumnSlice - 1) / kColumnSlice), static_cast<unsigned>(groups));
  const dim3 block(kColumnSlice, kColumnThreadRows);
  column_partial_kernel<K><<<grid, block, 0, stream>>>(values, n, c, rows_per_group, groups, scratch);
  TESSERA_CUDA_CHECK_LAUNCH("column_partial_kernel");
  column_finish_kernel<K, T><<<grid_for(c), kThreads, 0, stream>>>(scratch, groups, c, outputs);
  TESSERA_CUDA_CHECK_LAUNCH("column_finish_kernel");
}

}  // namespace tessera::detail
