// rotary_math: rotary position embedding (RoPE) in the convention transformers applies to Llama
// ("rotate_half": a head of size hs is hs/2 pairs (j, j + hs/2), not adjacent elements), as scalar
// TESSERA_HD functions the CPU kernels and CUDA kernels share.
//
//   inverse frequency of pair j:  w_j = 1 / theta^(2j / hs)        (f32, as transformers computes it)
//   angle at position p:          a = p * w_j                       (one f32 product)
//   forward:   y1 = x1 cos a - x2 sin a,   y2 = x2 cos a + x1 sin a
//   backward:  dx1 = dy1 cos a + dy2 sin a,   dx2 = dy2 cos a - dy1 sin a   (the inverse rotation)
#pragma once

#include <cmath>
#include <cstdint>

#include "tessera/precision/host_device.hpp"
#include "tessera/runtime/math/fma_math.hpp"

namespace tessera {

TESSERA_HD float rotary_inverse_frequency(std::int64_t pair, std::int64_t head_size, float theta) {
  return 1.0f / powf(theta, static_cast<float>(2 * pair) / static_cast<float>(head_size));
}

TESSERA_HD float rotary_angle(std::int64_t position, float inverse_frequency) {
  return static_cast<float>(position) * inverse_frequency;
}

// (x1, x2) rotated by the angle whose cosine and sine are (c, s).
TESSERA_HD void rotary_rotate(float& x1, float& x2, float c, float s) {
  const float y1 = madd(x1, c, -(x2 * s));
  const float y2 = madd(x2, c, x1 * s);
  x1 = y1;
  x2 = y2;
}

// (dy1, dy2) rotated back: the gradient of rotary_rotate's inputs.
TESSERA_HD void rotary_rotate_back(float& dy1, float& dy2, float c, float s) { rotary_rotate(dy1, dy2, c, -s); }

}  // namespace tessera
