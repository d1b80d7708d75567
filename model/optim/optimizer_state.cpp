// The optimizers the engine can run: names, state specs and construction.
#include "tessera/model/optim/optimizer_state.hpp"

#include "tessera/core/setting_error.hpp"
#include "tessera/model/optim/adamw8bit_rule.hpp"
#include "tessera/model/optim/adamw_rule.hpp"

namespace tessera {

const char* optimizer_kind_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdamW: return "adamw";
    case OptimizerKind::kAdamW8bit: return "adamw8bit";
  }
  return "unknown";
}

OptimizerKind parse_optimizer_kind(const std::string& text) {
  if (text == "adamw" || text == "adam") return OptimizerKind::kAdamW;
  if (text == "adamw8bit" || text == "adamw-8bit") return OptimizerKind::kAdamW8bit;
  throw SettingError("optimizer.kind", text, "use adamw or adamw8bit");
}

void OptimizerConfig::validate() const {
  if (kind == OptimizerKind::kAdamW8bit && block_size != 256 && block_size != 2048) {
    throw SettingError("optimizer.block_size", std::to_string(block_size),
                       "8-bit AdamW quantizes in blocks of 256 or 2048 elements");
  }
}

std::vector<StateSpec> optimizer_state_specs(const OptimizerConfig& config) {
  switch (config.kind) {
    case OptimizerKind::kAdamW: return AdamWRule::static_specs();
    case OptimizerKind::kAdamW8bit: return AdamW8bitRule::static_specs(config.block_size);
  }
  return {};
}

std::int64_t optimizer_state_bytes(const OptimizerConfig& config, std::int64_t count) {
  std::int64_t bytes = 0;
  for (const StateSpec& s : optimizer_state_specs(config)) {
    bytes +=
        static_cast<std::int64_t>(dtype_size(s.dtype)) * ((count + s.elements_per_value - 1) / s.elements_per_value);
  }
  return bytes;
}

double optimizer_state_bytes_per_element(const OptimizerConfig& config) {
  double bytes = 0.0;
  for (const StateSpec& s : optimizer_state_specs(config)) {
    bytes += static_cast<double>(dtype_size(s.dtype)) / static_cast<double>(s.elements_per_value);
  }
  return bytes;
}

std::int64_t optimizer_alignment(const OptimizerConfig& config) {
  return config.kind == OptimizerKind::kAdamW8bit ? config.block_size : 1;
}

std::unique_ptr<OptimizerRule> make_optimizer_rule(const OptimizerConfig& config) {
  config.validate();
  switch (config.kind) {
    case OptimizerKind::kAdamW: return std::make_unique<AdamWRule>(config.adamw);
    case OptimizerKind::kAdamW8bit: return std::make_unique<AdamW8bitRule>(config.adamw, config.block_size);
  }
  return nullptr;
}

}  // namespace tessera
