// MaskedCrossEntropy: CrossEntropyLoss's kernels (whose kIgnoredTarget rows add 0), divided by the rows
// counted.
#include "tessera/training/losses/masked_cross_entropy.hpp"

#include <algorithm>
#include <vector>

#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

std::int64_t MaskedCrossEntropy::forward_sum(Context& ctx, const Tensor& outputs, const MicroBatch& batch,
                                             double* device_sum) {
  loss_.forward_sum(ctx, outputs, batch.targets, device_sum);  // checks the shapes, names them
  std::vector<std::int32_t> host(static_cast<std::size_t>(batch.targets.numel()));
  ctx.device.copy_to_host(host.data(), batch.targets.data(), host.size() * sizeof(std::int32_t));
  const std::int64_t counted =
      std::count_if(host.begin(), host.end(), [](std::int32_t t) { return t != kIgnoredTarget; });
  counted_ = std::max<std::int64_t>(counted, 1);
  return counted_;
}

Tensor MaskedCrossEntropy::backward(Context& ctx, float scale) {
  return loss_.backward_mean_over(ctx, scale, counted_);
}

}  // namespace tessera
