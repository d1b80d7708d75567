// tokenizer_difference: kind, token count and vocabulary hash compared.
#include "tessera/text/tokenizer/tokenizer_match.hpp"
#include "tessera/core/hex64.hpp"

#include <cstdio>

namespace tessera {
namespace {

std::string kind_and_size(const TokenizerSpec& spec) {
  return std::string(tokenizer_kind_name(spec.kind)) + " with " + std::to_string(spec.vocab_size) + " tokens";
}


}  // namespace

std::optional<std::string> tokenizer_difference(const TokenizerSpec& model, const TokenizerSpec& data) {
  if (model.kind != data.kind || model.vocab_size != data.vocab_size) {
    return kind_and_size(model) + " vs " + kind_and_size(data);
  }
  if (model.files_hash != 0 && data.files_hash != 0 && model.files_hash != data.files_hash) {
    return kind_and_size(model) + " both, but their vocabulary files differ (hash " + hex64(model.files_hash) +
           " vs " + hex64(data.files_hash) + ")";
  }
  return std::nullopt;
}

}  // namespace tessera
