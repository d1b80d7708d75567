// Temperature / top-k sampling over the last position's logits.
#include "tessera/model/modules/gpt_sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace tessera {

std::vector<std::int32_t> sample_tokens(const LogitsFunction& logits_of, const GptConfig& config, Device& device,
                                        std::vector<std::int32_t> prompt, const SamplingOptions& options, Rng& rng) {
  const LastLogitsFunction last_of = [&](Context& ctx, const Tensor& tokens) {
    const Tensor logits = logits_of(ctx, tokens);
    const std::int64_t t = logits.dim(1), full_vocab = logits.dim(2);
    return logits.view((t - 1) * full_vocab, {full_vocab}).to_host_f32();
  };
  return sample_tokens(last_of, config, device, std::move(prompt), options, rng);
}

std::vector<std::int32_t> sample_tokens(const LastLogitsFunction& last_logits_of, const GptConfig& config,
                                        Device& device, std::vector<std::int32_t> prompt,
                                        const SamplingOptions& options, Rng& rng) {
  if (prompt.empty()) throw std::invalid_argument("sample_tokens: the prompt must hold at least one token");
  Context ctx(device);
  ctx.training = false;
  const std::int64_t max_t = config.max_seq_len;
  std::int64_t vocab = config.vocab_size;
  if (options.vocab_limit > 0) vocab = std::min(vocab, options.vocab_limit);
  std::vector<std::int32_t> generated;
  std::vector<double> probs(static_cast<std::size_t>(vocab));
  for (std::int64_t i = 0; i < options.new_tokens; ++i) {
    const std::int64_t t = std::min<std::int64_t>(max_t, static_cast<std::int64_t>(prompt.size()));
    std::vector<std::int32_t> window(prompt.end() - t, prompt.end());
    Tensor tokens = Tensor::from_host_i32(device, window, {1, t}, MemoryCategory::kWorkspace);
    const std::vector<float> last = last_logits_of(ctx, tokens);
    std::int32_t next = 0;
    if (options.temperature <= 0.0f) {
      next = static_cast<std::int32_t>(std::max_element(last.begin(), last.begin() + vocab) - last.begin());
    } else {
      float cutoff = -INFINITY;
      if (options.top_k > 0 && options.top_k < vocab) {
        std::vector<float> sorted(last.begin(), last.begin() + vocab);
        std::nth_element(sorted.begin(), sorted.begin() + (options.top_k - 1), sorted.end(), std::greater<>());
        cutoff = sorted[options.top_k - 1];
      }
      const float max_logit = *std::max_element(last.begin(), last.begin() + vocab);
      double total = 0.0;
      for (std::int64_t v = 0; v < vocab; ++v) {
        probs[v] = last[v] < cutoff ? 0.0 : std::exp((last[v] - max_logit) / options.temperature);
        total += probs[v];
      }
      double u = static_cast<double>(rng.uniform()) * total;
      next = static_cast<std::int32_t>(vocab - 1);
      for (std::int64_t v = 0; v < vocab; ++v) {
        u -= probs[v];
        if (u < 0.0) {
          next = static_cast<std::int32_t>(v);
          break;
        }
      }
    }
    prompt.push_back(next);
    generated.push_back(next);
  }
  return generated;
}

}  // namespace tessera
