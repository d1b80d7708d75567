// MetaKernels: the Kernels table of the meta device. Every kernel does nothing (there is no data;
// reductions write nothing), so the real modules and engine run at the cost of their bookkeeping.
#pragma once

#include "tessera/runtime/kernels.hpp"

namespace tessera {

class MetaKernels final : public Kernels {
 public:
  void gemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, float, const float*, std::int64_t, const float*,
            std::int64_t, float, float*, std::int64_t) const override {}
  void linear_forward(float*, const float*, const float*, const float*, std::int64_t, std::int64_t,
                      std::int64_t) const override {}
  void linear_backward(float*, float*, float*, const float*, const float*, const float*, std::int64_t, std::int64_t,
                       std::int64_t) const override {}
  void linear_gelu_forward(float*, float*, const float*, const float*, const float*, std::int64_t, std::int64_t,
                           std::int64_t) const override {}
  void linear_gelu_backward(float*, float*, float*, float*, const float*, const float*, const float*, std::int64_t,
                            std::int64_t, std::int64_t) const override {}
  void embedding_forward(float*, const std::int32_t*, const float*, const float*, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t) const override {}
  void embedding_backward(float*, float*, const float*, const std::int32_t*, std::int64_t, std::int64_t,
                          std::int64_t, std::int64_t) const override {}
  void layernorm_forward(float*, float*, float*, const float*, const float*, const float*, std::int64_t,
                         std::int64_t, float) const override {}
  void layernorm_backward(float*, float*, float*, const float*, const float*, const float*, const float*,
                          const float*, std::int64_t, std::int64_t) const override {}
  void residual_layernorm_forward(float*, float*, float*, float*, const float*, const float*, const float*,
                                  const float*, std::int64_t, std::int64_t, float) const override {}
  void residual_layernorm_backward(float*, float*, float*, const float*, const float*, const float*, const float*,
                                   const float*, const float*, std::int64_t, std::int64_t) const override {}
  void attention_forward(float*, float*, const float*, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t) const override {}
  void attention_backward(float*, float*, const float*, const float*, const float*, std::int64_t, std::int64_t,
                          std::int64_t, std::int64_t) const override {}
  void gelu_forward(float*, const float*, std::int64_t) const override {}
  void gelu_backward(float*, const float*, const float*, std::int64_t) const override {}
  void add(float*, const float*, const float*, std::int64_t) const override {}
  void scale(float*, float, std::int64_t) const override {}
  void cross_entropy_forward(float*, float*, const float*, const std::int32_t*, std::int64_t,
                             std::int64_t) const override {}
  void cross_entropy_backward(float*, const float*, const float*, const std::int32_t*, float, std::int64_t,
                              std::int64_t) const override {}
  void sum(const float*, std::int64_t, double*) const override {}
  void sum_squares(const float*, std::int64_t, double*) const override {}
  void add_sum_squares(float*, const float*, const float*, std::int64_t, double*) const override {}
  void has_non_finite(const float*, std::int64_t, std::int32_t*) const override {}
  void adamw_update(float*, const float*, float*, float*, std::int64_t, const AdamWScalars&) const override {}
  void adamw8bit_update(float*, const float*, std::int8_t*, float*, std::uint8_t*, float*, std::int64_t, std::int64_t,
                        std::span<const ParamSegment>, const AdamWScalars&, const AdamWScalars&) const override {}
  void convert(const void*, DType, void*, DType, std::int64_t) const override {}
};

}  // namespace tessera
