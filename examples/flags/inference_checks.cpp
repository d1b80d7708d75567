// Context, memory and tokenizer checks of the inference programs.
#include "flags/inference_checks.hpp"

#include <stdexcept>

#include "tessera/runtime/memory_tracker.hpp"
#include "tessera/text/tokenizer/tokenizer_match.hpp"

namespace tessera {

void check_within_context(std::int64_t tokens, const GptConfig& model, const std::string& flag) {
  if (tokens <= model.max_seq_len) return;
  throw std::invalid_argument(flag + ": " + std::to_string(tokens) + " positions, longer than the model's context of " +
                              std::to_string(model.max_seq_len) + "; give at most " +
                              std::to_string(model.max_seq_len));
}

std::int64_t forward_bytes_bound(const GptConfig& model, std::int64_t micro, std::int64_t seq_len) {
  constexpr std::int64_t kActivationsPerChannel = 18;
  const std::int64_t per_token = model.vocab_size + kActivationsPerChannel * model.channels * model.layers;
  const std::int64_t tokens = micro * seq_len;
  if (per_token > 0 && tokens > INT64_MAX / 4 / per_token) return INT64_MAX;
  return tokens * per_token * 4;
}

void check_forward_fits(const GptConfig& model, std::int64_t micro, std::int64_t seq_len, const Device& device,
                        int sharers, const std::string& micro_flag) {
  const MemoryBudget budget = device.memory_budget();
  const std::int64_t available = budget.share(sharers);
  if (available < 0) return;
  const std::int64_t needed = forward_bytes_bound(model, micro, seq_len);
  if (needed <= available) return;
  const std::int64_t one = forward_bytes_bound(model, 1, seq_len);
  const std::int64_t fits = one > 0 ? available / one : 0;
  throw std::invalid_argument(micro_flag + " " + std::to_string(micro) + ": a forward of " + std::to_string(micro) +
                              " x " + std::to_string(seq_len) + " tokens holds up to " + format_bytes(needed) +
                              " (logits and activations), more than the " + format_bytes(available) +
                              " available (" + budget.describe(sharers) + "); " +
                              (fits > 0 ? "use " + micro_flag + " " + std::to_string(fits) + " or less"
                                        : "this model's context does not fit even one sequence here"));
}

void check_data_tokenizer(const std::optional<TokenizerSpec>& model, const std::optional<TokenizerSpec>& data,
                          const std::string& data_path) {
  if (!model || !data) return;
  if (const auto difference = tokenizer_difference(*model, *data)) {
    throw std::invalid_argument(data_path + ": its tokens are another tokenizer's than the model's: " + *difference +
                                " (model vs data); use data made with the model's tokenizer (tessera_prepare "
                                "--tokenizer)");
  }
}

}  // namespace tessera
