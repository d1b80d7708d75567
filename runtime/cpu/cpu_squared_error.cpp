// CPU squared error, forward and backward, element by element (formula in
// runtime/math/squared_error_math.hpp, the CUDA kernels'); bf16 predictions are widened as read and
// each gradient rounded to bf16 once.
#include <cstdint>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/squared_error_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

template <typename T>
void squared_error_forward_t(float* losses, const T* pred, const float* targets, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (std::int64_t i = 0; i < n; ++i) losses[i] = squared_error_value(to_f32(pred[i]), targets[i]);
}

template <typename T>
void squared_error_backward_t(T* dpred, const T* pred, const float* targets, float dloss, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (std::int64_t i = 0; i < n; ++i)
    dpred[i] = from_f32<T>(squared_error_gradient(to_f32(pred[i]), targets[i], dloss));
}

}  // namespace

void LevelKernels::squared_error_forward(float* losses, const float* pred, const float* targets, std::int64_t n) const {
  squared_error_forward_t(losses, pred, targets, n);
}
void LevelKernels::squared_error_forward(float* losses, const Bf16* pred, const float* targets, std::int64_t n) const {
  squared_error_forward_t(losses, pred, targets, n);
}
void LevelKernels::squared_error_backward(float* dpred, const float* pred, const float* targets, float dloss,
                                          std::int64_t n) const {
  squared_error_backward_t(dpred, pred, targets, dloss, n);
}
void LevelKernels::squared_error_backward(Bf16* dpred, const Bf16* pred, const float* targets, float dloss,
                                          std::int64_t n) const {
  squared_error_backward_t(dpred, pred, targets, dloss, n);
}

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
