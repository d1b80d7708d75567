// Tokenizer fields of a RunConfig.
#include "tessera/checkpointing/export/tokenizer_fields.hpp"

#include <cstdio>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "tessera/core/parse_number.hpp"

namespace tessera {

void add_tokenizer(RunConfig& config, const TokenizerSpec& tokenizer) {
  config.set_run("tokenizer", std::string(tokenizer_kind_name(tokenizer.kind)));
  config.set_run("tokenizer_vocab", tokenizer.vocab_size);
  if (!tokenizer.dir.empty()) {
    config.set_run("tokenizer_dir", std::filesystem::absolute(tokenizer.dir).lexically_normal().string());
  }
  if (tokenizer.files_hash != 0) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(tokenizer.files_hash));
    config.set_run("tokenizer_hash", std::string(hex));
  }
}

std::optional<TokenizerSpec> stored_tokenizer(const RunConfig& config) {
  const auto& run = config.run();
  const auto kind = run.find("tokenizer");
  if (kind == run.end()) return std::nullopt;
  TokenizerSpec spec;
  spec.kind = parse_tokenizer_kind(kind->second, "checkpoint field run.tokenizer");
  if (const auto it = run.find("tokenizer_vocab"); it != run.end()) {
    spec.vocab_size = static_cast<std::int32_t>(
        parse_integer(it->second, "checkpoint field run.tokenizer_vocab", 1, std::numeric_limits<std::int32_t>::max()));
  }
  if (const auto it = run.find("tokenizer_hash"); it != run.end()) {
    spec.files_hash = parse_hex_u64(it->second, "checkpoint field run.tokenizer_hash");
  }
  if (const auto it = run.find("tokenizer_dir"); it != run.end()) spec.dir = it->second;
  return spec;
}

}  // namespace tessera
