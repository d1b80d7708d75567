// SampleLoader: window permutation per epoch (SplitMix64 Fisher-Yates) and sample extraction.
#include "tessera/text/data/sample_loader.hpp"

#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "tessera/core/splitmix64.hpp"

namespace tessera {

std::vector<std::uint32_t> shuffled_windows(std::int64_t windows, std::uint64_t seed, std::int64_t epoch) {
  std::vector<std::uint32_t> perm(static_cast<std::size_t>(windows));
  std::iota(perm.begin(), perm.end(), std::uint32_t{0});
  detail::SplitMix64 rng(detail::mix64(detail::mix64(seed) + static_cast<std::uint64_t>(epoch)));
  for (std::int64_t i = windows - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(i) + 1));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

SampleLoader::SampleLoader(const TokenDataset& dataset, std::int64_t seq_len, std::uint64_t seed, SampleOrder order)
    : dataset_(dataset), seq_len_(seq_len), seed_(seed), order_(order), cache_(std::make_unique<PermutationCache>()) {
  if (seq_len < 1) {
    throw std::invalid_argument("sample loader: seq_len is " + std::to_string(seq_len) + "; it must be at least 1");
  }
  const std::int64_t tokens = dataset.num_tokens();
  if (tokens < seq_len + 1) {
    throw std::invalid_argument(dataset.describe() + ": holds " + std::to_string(tokens) +
                                " tokens, too few for one sample of seq_len " + std::to_string(seq_len) + " (" +
                                std::to_string(seq_len + 1) +
                                " tokens: the inputs plus one for the shifted targets); use a shorter "
                                "sequence length or more data");
  }
  windows_ = (tokens - 1) / seq_len;
  if (windows_ > static_cast<std::int64_t>(std::numeric_limits<std::uint32_t>::max())) {
    throw std::invalid_argument(dataset.describe() + ": " + std::to_string(windows_) + " windows of seq_len " +
                                std::to_string(seq_len) +
                                " are more than the loader indexes (2^32 - 1); use a "
                                "longer sequence length or a slice of the data");
  }
}

std::int64_t SampleLoader::epoch_of(std::int64_t global_index) const {
  if (global_index < 0) {
    throw std::invalid_argument("sample loader: global sample index " + std::to_string(global_index) + " is negative");
  }
  return global_index / windows_;
}

std::int64_t SampleLoader::window_of(std::int64_t global_index) const {
  const std::int64_t epoch = epoch_of(global_index);
  const std::int64_t position = global_index % windows_;
  if (order_ == SampleOrder::kSequential) return position;
  return (*permutation(epoch))[static_cast<std::size_t>(position)];
}

std::shared_ptr<const std::vector<std::uint32_t>> SampleLoader::permutation(std::int64_t epoch) const {
  std::lock_guard lock(cache_->mutex);
  if (cache_->epoch != epoch) {
    // Computed under the lock: concurrent callers on the same epoch wait instead of repeating it.
    cache_->permutation = std::make_shared<const std::vector<std::uint32_t>>(shuffled_windows(windows_, seed_, epoch));
    cache_->epoch = epoch;
  }
  return cache_->permutation;
}

void SampleLoader::sample(std::int64_t global_index, std::int32_t* inputs, std::int32_t* targets) const {
  const std::int64_t start = window_of(global_index) * seq_len_;
  dataset_.read(start, seq_len_, inputs);
  dataset_.read(start + 1, seq_len_, targets);
}

void SampleLoader::batch(std::int64_t first_global_index, std::int64_t count, std::int32_t* inputs,
                         std::int32_t* targets) const {
  if (count < 0) throw std::invalid_argument("sample loader: batch count " + std::to_string(count) + " is negative");
  for (std::int64_t i = 0; i < count; ++i) {
    sample(first_global_index + i, inputs + i * seq_len_, targets + i * seq_len_);
  }
}

std::int64_t first_sample_index(std::int64_t step, std::int64_t micro_step, int rank, std::int64_t micro_batch,
                                int world_size, std::int64_t accumulation) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("first_sample_index: " + what); };
  if (step < 0) bad("step " + std::to_string(step) + " is negative");
  if (micro_batch < 1) bad("micro_batch " + std::to_string(micro_batch) + " must be at least 1");
  if (world_size < 1) bad("world_size " + std::to_string(world_size) + " must be at least 1");
  if (accumulation < 1) bad("accumulation " + std::to_string(accumulation) + " must be at least 1");
  if (rank < 0 || rank >= world_size) {
    bad("rank " + std::to_string(rank) + " is outside [0, " + std::to_string(world_size) + ")");
  }
  if (micro_step < 0 || micro_step >= accumulation) {
    bad("micro_step " + std::to_string(micro_step) + " is outside [0, " + std::to_string(accumulation) + ")");
  }
  const std::int64_t per_micro_step = micro_batch * world_size;
  return step * (per_micro_step * accumulation) + micro_step * per_micro_step + rank * micro_batch;
}

}  // namespace tessera
