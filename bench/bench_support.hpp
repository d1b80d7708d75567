// Shared pieces of the benchmark programs: random GPT batches and the median of timings.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/training/local_trainer.hpp"

namespace tessera::benchmarks {

// inputs and targets (b, T) i32, uniform over the vocabulary, from `seed`.
inline MicroBatch random_batch(Device& device, const GptConfig& c, std::int64_t b, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::int32_t> in(static_cast<std::size_t>(b * c.max_seq_len)), tg(in.size());
  for (auto& x : in) x = static_cast<std::int32_t>(rng.below(c.vocab_size));
  for (auto& x : tg) x = static_cast<std::int32_t>(rng.below(c.vocab_size));
  return {Tensor::from_host_i32(device, in, {b, c.max_seq_len}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {b, c.max_seq_len}, MemoryCategory::kWorkspace)};
}

// The median (mean of the middle two for an even count; 0 for none).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace tessera::benchmarks
