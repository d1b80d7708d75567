// Tessera <-> Hugging Face GPT-2 names and layouts.
#include "tessera/checkpointing/export/hf_gpt2_names.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace tessera {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// (rows, cols) -> (cols, rows), row-major.
std::vector<float> transpose(const std::vector<float>& values, std::int64_t rows, std::int64_t cols) {
  std::vector<float> out(values.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c)
      out[static_cast<std::size_t>(c * rows + r)] = values[static_cast<std::size_t>(r * cols + c)];
  }
  return out;
}

}  // namespace

std::optional<HfTensorName> hf_gpt2_name(const std::string& n) {
  if (n == "embed.wte") return HfTensorName{"transformer.wte.weight", false, true};
  if (n == "embed.wpe") return HfTensorName{"transformer.wpe.weight", false, false};
  if (n == "ln_f.weight" || n == "ln_f.bias") return HfTensorName{"transformer." + n, false, false};
  if (!starts_with(n, "h.")) return std::nullopt;
  const std::size_t dot = n.find('.', 2);
  if (dot == std::string::npos) return std::nullopt;
  const std::string block = n.substr(0, dot + 1), rest = n.substr(dot + 1);  // "h.3.", "attn.qkv.weight"
  static const std::map<std::string, std::string> kModules{{"ln_1.", "ln_1."},
                                                           {"ln_2.", "ln_2."},
                                                           {"attn.qkv.", "attn.c_attn."},
                                                           {"attn.proj.", "attn.c_proj."},
                                                           {"mlp.fc.", "mlp.c_fc."},
                                                           {"mlp.proj.", "mlp.c_proj."}};
  for (const auto& [ours, theirs] : kModules) {
    if (!starts_with(rest, ours)) continue;
    const std::string leaf = rest.substr(ours.size());
    if (leaf != "weight" && leaf != "bias") return std::nullopt;
    const bool linear = !starts_with(ours, "ln_");
    return HfTensorName{"transformer." + block + theirs + leaf, linear && leaf == "weight", false};
  }
  return std::nullopt;
}

Shape hf_shape(const HfTensorName& hf, const Shape& shape, std::int64_t vocab_rows) {
  if (hf.transposed) return {shape.at(1), shape.at(0)};
  if (hf.vocab_rows) return {vocab_rows, shape.at(1)};
  return shape;
}

std::vector<float> to_hf_layout(const HfTensorName& hf, const Shape& shape, const std::vector<float>& values,
                                std::int64_t vocab_rows) {
  if (hf.transposed) return transpose(values, shape.at(0), shape.at(1));
  if (hf.vocab_rows) return {values.begin(), values.begin() + vocab_rows * shape.at(1)};
  return values;
}

std::vector<float> from_hf_layout(const HfTensorName& hf, const Shape& shape, const Shape& stored,
                                  const std::vector<float>& values) {
  if (hf.transposed) return transpose(values, stored.at(0), stored.at(1));
  if (hf.vocab_rows) {
    std::vector<float> out(static_cast<std::size_t>(shape_numel(shape)), 0.0f);
    std::copy(values.begin(), values.end(), out.begin());
    return out;
  }
  return values;
}

}  // namespace tessera
