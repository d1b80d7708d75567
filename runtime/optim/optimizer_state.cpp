// The optimizers the engine can run: names, state specs and construction.
#include "runtime/optim/optimizer_state.hpp"

#include "core/setting_error.hpp"
#include "runtime/optim/adamw_state.hpp"

namespace tessera {

const char* optimizer_kind_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdamW: return "adamw";
  }
  return "unknown";
}

OptimizerKind parse_optimizer_kind(const std::string& text) {
  if (text == "adamw" || text == "adam") return OptimizerKind::kAdamW;
  throw SettingError("optimizer.kind", text, "Tessera has AdamW only (use adamw)");
}

std::vector<StateSpec> optimizer_state_specs(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdamW: return AdamWState::specs();
  }
  return {};
}

std::int64_t optimizer_state_bytes_per_element(OptimizerKind kind) {
  std::int64_t bytes = 0;
  for (const StateSpec& s : optimizer_state_specs(kind)) bytes += static_cast<std::int64_t>(dtype_size(s.dtype));
  return bytes;
}

std::unique_ptr<OptimizerState> make_optimizer_state(const OptimizerConfig& config, Device& device,
                                                     std::int64_t count, MemoryKind memory) {
  switch (config.kind) {
    case OptimizerKind::kAdamW: return std::make_unique<AdamWState>(config.adamw, device, count, memory);
  }
  return nullptr;
}

}  // namespace tessera
