// SampleLoader: training samples (inputs, targets) of seq_len tokens from a TokenDataset, in an
// order that is a pure function of (seed, global sample index) — never of the number of processes.
//
// The dataset is cut into windows_per_epoch() = (num_tokens - 1) / seq_len non-overlapping windows
// of seq_len + 1 tokens (window w starts at token w * seq_len; trailing tokens that do not fill a
// window are not used). Global sample g belongs to epoch e = g / windows_per_epoch() and is window
// perm_e[g % windows_per_epoch()], where perm_e is a Fisher-Yates shuffle of 0..W-1 driven by
// SplitMix64 seeded from (seed, e) — identical on every platform and standard library. The inputs
// are the window's first seq_len tokens, the targets its last seq_len (inputs shifted by one).
//
// The loader holds no position: a training loop (and its checkpoint) keeps only the global index.
// Which indices a rank reads is first_sample_index() below. Thread-safe: sample() and batch() may
// be called concurrently (the current epoch's permutation is cached behind a mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "tessera/text/data/token_dataset.hpp"

namespace tessera {

enum class SampleOrder : std::uint8_t {
  kShuffled,    // a fresh permutation of the windows every epoch (training)
  kSequential,  // windows in dataset order every epoch (evaluation); the seed is unused
};

class SampleLoader {
 public:
  // Keeps a (cheap, shared) copy of `dataset`. Throws std::invalid_argument when seq_len < 1 or the
  // dataset holds fewer than seq_len + 1 tokens (the message names the files, their token count
  // and seq_len).
  SampleLoader(const TokenDataset& dataset, std::int64_t seq_len, std::uint64_t seed,
               SampleOrder order = SampleOrder::kShuffled);

  std::int64_t seq_len() const { return seq_len_; }
  std::int64_t windows_per_epoch() const { return windows_; }

  std::int64_t epoch_of(std::int64_t global_index) const;   // g / windows_per_epoch()
  std::int64_t window_of(std::int64_t global_index) const;  // window read by sample g (starts at w * seq_len)

  // Sample `global_index` (>= 0): inputs = tokens [w*T, w*T + T), targets = tokens [w*T + 1, w*T + T + 1).
  void sample(std::int64_t global_index, std::int32_t* inputs /*(T) i32*/, std::int32_t* targets /*(T) i32*/) const;
  // Samples first_global_index .. first_global_index + count - 1, row after row.
  void batch(std::int64_t first_global_index, std::int64_t count, std::int32_t* inputs /*(count,T) i32*/,
             std::int32_t* targets /*(count,T) i32*/) const;

 private:
  struct PermutationCache {
    std::mutex mutex;
    std::int64_t epoch = -1;
    std::shared_ptr<const std::vector<std::uint32_t>> permutation;
  };
  std::shared_ptr<const std::vector<std::uint32_t>> permutation(std::int64_t epoch) const;

  TokenDataset dataset_;
  std::int64_t seq_len_;
  std::uint64_t seed_;
  SampleOrder order_;
  std::int64_t windows_ = 0;
  std::unique_ptr<PermutationCache> cache_;  // unique_ptr keeps the loader movable
};

// The permutation of 0..windows-1 used for `epoch` (exposed for tests and tools).
std::vector<std::uint32_t> shuffled_windows(std::int64_t windows, std::uint64_t seed, std::int64_t epoch);

// The first global sample index read by `rank` at optimizer step `step`, micro-step `micro_step`
// (0 <= micro_step < accumulation), when each of `world_size` ranks reads `micro_batch` samples per
// micro-step:
//   step * (micro_batch * world_size * accumulation) + micro_step * (micro_batch * world_size)
//        + rank * micro_batch.
// The rank reads the micro_batch consecutive indices from there. One optimizer step consumes the
// global batch [step * G, (step + 1) * G) with G = micro_batch * world_size * accumulation, whatever
// the split: micro 2 x accumulation 2 x 2 ranks reads exactly the samples of micro 8 x 1 rank, so
// the averaged gradient is the same. Throws std::invalid_argument on a negative step, a rank outside
// [0, world_size) or a micro_step outside [0, accumulation).
std::int64_t first_sample_index(std::int64_t step, std::int64_t micro_step, int rank, std::int64_t micro_batch,
                                int world_size, std::int64_t accumulation);

}  // namespace tessera
