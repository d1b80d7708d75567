// Model presets, parameter counts per unit, and parsing of counts and byte sizes.
#include "tessera/planning/model_spec.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "tessera/core/setting_error.hpp"

namespace tessera {
namespace {

struct Preset {
  const char* name;
  std::int64_t layers, channels, heads, vocab, seq_len;
  bool llama = false;
  std::int64_t kv_heads = 0, ffn_dim = 0;
  float rope_theta = 10000.0f;
};

constexpr Preset kPresets[] = {
    {"tiny", 2, 9, 3, 13, 6},
    {"small", 6, 384, 6, 8192, 256},
    {"gpt2-124m", 12, 768, 12, 50257, 1024},
    {"gpt2-350m", 24, 1024, 16, 50257, 1024},
    {"gpt2-774m", 36, 1280, 20, 50257, 1024},
    {"gpt2-1.5b", 48, 1600, 25, 50257, 1024},
    {"llama-7b-shaped", 32, 4096, 32, 32000, 2048},
    {"llama-13b-shaped", 40, 5120, 40, 32000, 2048},
    {"llama-tiny", 2, 16, 4, 13, 6, true, 2, 24},
    {"llama2-7b", 32, 4096, 32, 32000, 4096, true, 32, 11008},
    {"llama3-8b", 32, 4096, 32, 128256, 8192, true, 8, 14336, 500000.0f},
    {"llama3-70b", 80, 8192, 64, 128256, 8192, true, 8, 28672, 500000.0f},
};

std::string short_count(std::int64_t n) {
  char buf[32];
  const double x = static_cast<double>(n);
  if (n >= 1000000000LL) {
    std::snprintf(buf, sizeof buf, "%.2fB", x / 1e9);
  } else if (n >= 1000000LL) {
    std::snprintf(buf, sizeof buf, "%.2fM", x / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  }
  return buf;
}

// Splits "1.5GB" into 1.5 and "GB"; throws when the number part is missing or malformed.
std::pair<double, std::string> split_number(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || !std::isfinite(value) || value < 0) {
    throw std::invalid_argument(what + ": '" + text + "' is not a non-negative number with an optional unit");
  }
  std::string unit;
  for (char c : text.substr(used)) {
    if (!std::isspace(static_cast<unsigned char>(c)))
      unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return {value, unit};
}

// value x scale as an integer, refused (naming `what` and `text`) beyond what 64 bits hold.
std::int64_t scaled(double value, double scale, const std::string& what, const std::string& text) {
  const double x = value * scale;
  if (!(x < 9.2e18)) {
    throw std::invalid_argument(what + ": '" + text + "' is too large (at most about 9.2e18)");
  }
  return static_cast<std::int64_t>(std::llround(x));
}

}  // namespace

std::int64_t ModelSpec::parameter_count() const {
  if (gpt) return gpt->parameter_count();
  if (custom && custom->build) return custom->build()->parameter_count();
  return raw_parameters;
}

std::string ModelSpec::describe() const {
  std::string s = name;
  if (gpt) s += ": " + gpt->to_string();
  return s + (gpt ? ", " : ": ") + short_count(parameter_count()) + " parameters";
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

ModelSpec model_preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) {
      GptConfig c = p.llama ? GptConfig::llama(p.vocab, p.seq_len, p.layers, p.heads, p.channels, p.kv_heads, p.ffn_dim)
                            : GptConfig{p.vocab, p.seq_len, p.layers, p.heads, p.channels};
      c.rope_theta = p.rope_theta;
      return {p.name, c, 0};
    }
  }
  std::string list;
  for (const Preset& p : kPresets) list += (list.empty() ? "" : ", ") + std::string(p.name);
  throw std::invalid_argument("unknown model preset '" + name + "': use one of " + list +
                              ", or give --layers/--dim/--heads/--vocab/--seq-len, or --params N");
}

ModelSpec model_from_module(std::string name, CustomModel model) {
  ModelSpec spec;
  spec.name = std::move(name);
  spec.custom = std::move(model);
  return spec;
}

ModelSpec model_from_parameter_count(std::int64_t parameters) {
  if (parameters <= 0) throw SettingError("plan.parameters", std::to_string(parameters), "must be positive");
  return {short_count(parameters), std::nullopt, parameters};
}

std::int64_t parse_count(const std::string& text, const std::string& what) {
  const auto [value, unit] = split_number(text, what);
  double scale = 1.0;
  if (unit == "K") {
    scale = 1e3;
  } else if (unit == "M") {
    scale = 1e6;
  } else if (unit == "B" || unit == "G") {
    scale = 1e9;
  } else if (unit == "T") {
    scale = 1e12;
  } else if (!unit.empty()) {
    throw std::invalid_argument(what + ": unknown suffix in '" + text + "' (use K, M, B or T, e.g. 7B or 124M)");
  }
  return scaled(value, scale, what, text);
}

std::int64_t parse_bytes(const std::string& text, const std::string& what) {
  const auto [value, unit] = split_number(text, what);
  struct Unit {
    const char* name;
    double scale;
  };
  static constexpr Unit kUnits[] = {
      {"", 1.0},    {"B", 1.0},      {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
      {"TB", 1e12}, {"KIB", 1024.0}, {"MIB", 1048576.0}, {"GIB", 1073741824.0}, {"TIB", 1099511627776.0}};
  for (const Unit& u : kUnits) {
    if (unit == u.name) return scaled(value, u.scale, what, text);
  }
  throw std::invalid_argument(what + ": unknown unit in '" + text +
                              "' (use B, KB, MB, GB, TB (powers of 10) or KiB, MiB, GiB, TiB)");
}

std::vector<UnitSize> gpt_unit_sizes(const GptConfig& c, bool f32_apart) {
  // One norm's parameters: RMSNorm's gain, or LayerNorm's gain and bias.
  const std::int64_t norm = c.is_llama() ? c.channels : 2 * c.channels;
  std::vector<UnitSize> units;
  auto add = [&](const std::string& name, std::int64_t numel, std::int64_t norms) {
    if (!f32_apart) {
      units.push_back({name, numel});
      return;
    }
    if (numel > norms * norm) units.push_back({name, numel - norms * norm});
    units.push_back({name + " (f32)", norms * norm, true});
  };
  units.push_back({"embed", c.embedding_parameter_count()});
  for (std::int64_t l = 0; l < c.layers; ++l) add("h." + std::to_string(l), c.block_parameter_count(), 2);
  add(c.tied_head ? "ln_f" : "ln_f, head", c.head_parameter_count(), 1);
  return units;
}

}  // namespace tessera
