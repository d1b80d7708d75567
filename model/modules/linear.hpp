// Linear: y = x W^T + b over the last dimension. x (..., in) -> y (..., out), both in the dtype of the
// weight (the compute dtype: f32 or bf16).
// forward_gelu / backward_gelu run the layer with a GELU after it as one kernel each
// (linear_gelu_forward / linear_gelu_backward): the MLP's fc, whose caller keeps the pre-activation.
//
// Tensor parallelism (model/parallel/tensor_parallel.hpp): a column-parallel layer holds this
// rank's piece of every output segment (weight rows and bias), a row-parallel one its piece of the
// input features (weight columns) and the whole bias, which only the group's rank 0 adds in forward
// (the partial outputs are summed over the group after it); every rank accumulates the bias's
// gradient from the whole output gradient, so the replicated bias stays the same everywhere. The
// layer itself communicates nothing: its parent (attention, MLP) runs the region's entry and exit.
#pragma once

#include <vector>

#include "tessera/model/module.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

class Linear final : public Module {
 public:
  // weight (out, in) ~ N(0, init_std^2), bias (out) zeros when `bias`.
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias, float init_std = 0.02f);
  // Column-parallel: the global layer maps in_features to the sum of `out_segments` (the q, k, v
  // blocks of a fused projection, say); this rank holds its piece of each segment.
  static std::unique_ptr<Linear> column_parallel(std::int64_t in_features, std::vector<std::int64_t> out_segments,
                                                 bool bias, float init_std, const TensorParallel& tp);
  // Row-parallel: the global layer maps in_features (divided over the group; the caller checks that
  // it divides) to out_features; this rank holds in_features / N of its input columns.
  static std::unique_ptr<Linear> row_parallel(std::int64_t in_features, std::int64_t out_features, bool bias,
                                              float init_std, const TensorParallel& tp);

  std::string type_name() const override { return "Linear"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

  struct GeluOutput {
    Tensor pre;  // (..., out) x W^T + b
    Tensor out;  // (..., out) gelu(pre)
  };
  // The layer followed by GELU; keeps x (when ctx.training) as forward does. The same bits as
  // forward then the GELU kernel.
  GeluOutput forward_gelu(Context& ctx, const Tensor& x);
  // Backward of forward_gelu from dy (..., out), the gradient of the GELU output — overwritten with
  // the gradient of pre — and the kept pre; returns dx and accumulates the parameter gradients.
  Tensor backward_gelu(Context& ctx, const Tensor& dy, const Tensor& pre);

  std::int64_t in_features() const { return in_; }
  std::int64_t out_features() const { return out_; }

 protected:
  void clear_own_saved() override { input_ = Tensor(); }

 private:
  enum class Split : std::uint8_t { kNone, kColumn, kRow };
  Linear(std::int64_t in_features, const std::vector<std::int64_t>& out_segments, bool bias, float init_std,
         Split split, const TensorParallel* tp);
  // The bias forward adds, as T* (null: none, or a row-parallel layer off the group's rank 0).
  template <typename T>
  const T* forward_bias() const;

  std::int64_t in_, out_;
  Parameter& weight_;
  Parameter* bias_ = nullptr;
  bool forward_bias_ = true;  // false: a row-parallel layer whose partial output gets no bias
  Tensor input_;              // (..., in) kept for backward
};

// The child in `slot` when it is a plain Linear (not wrapped): a parent may then call its own entry
// points (forward_gelu, a backward given the input again); else null.
inline Linear* plain_linear(ModuleSlot& slot) { return dynamic_cast<Linear*>(slot.module.get()); }

}  // namespace tessera
