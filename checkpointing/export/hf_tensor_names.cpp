// Tessera <-> Hugging Face names and layouts, GPT-2 and Llama.
#include "tessera/checkpointing/export/hf_tensor_names.hpp"

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

// "h.3.attn.qkv.weight" -> {"3", "attn.qkv.weight"}; nullopt-like empty block for other names.
std::pair<std::string, std::string> split_block(const std::string& n) {
  if (!starts_with(n, "h.")) return {};
  const std::size_t dot = n.find('.', 2);
  if (dot == std::string::npos || dot == 2) return {};
  const std::string index = n.substr(2, dot - 2);
  if (!std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) return {};
  return {index, n.substr(dot + 1)};
}

std::vector<HfTensorName> gpt2_names(const std::string& n) {
  if (n == "embed.wte") return {{"transformer.wte.weight", false, true}};
  if (n == "embed.wpe") return {{"transformer.wpe.weight"}};
  if (n == "ln_f.weight" || n == "ln_f.bias") return {{"transformer." + n}};
  if (n == "head.weight") return {{"lm_head.weight", false, true}};
  const auto [index, rest] = split_block(n);
  if (index.empty()) return {};
  static const std::map<std::string, std::string> kModules{{"ln_1.", "ln_1."},
                                                           {"ln_2.", "ln_2."},
                                                           {"attn.qkv.", "attn.c_attn."},
                                                           {"attn.proj.", "attn.c_proj."},
                                                           {"mlp.fc.", "mlp.c_fc."},
                                                           {"mlp.proj.", "mlp.c_proj."}};
  for (const auto& [ours, theirs] : kModules) {
    if (!starts_with(rest, ours)) continue;
    const std::string leaf = rest.substr(ours.size());
    if (leaf != "weight" && leaf != "bias") return {};
    const bool linear = !starts_with(ours, "ln_");
    return {{"transformer.h." + index + "." + theirs + leaf, linear && leaf == "weight"}};
  }
  return {};
}

std::vector<HfTensorName> llama_names(const std::string& n, const Shape& shape) {
  if (n == "embed.wte") return {{"model.embed_tokens.weight", false, true}};
  if (n == "ln_f.weight") return {{"model.norm.weight"}};
  if (n == "head.weight") return {{"lm_head.weight", false, true}};
  const auto [index, rest] = split_block(n);
  if (index.empty()) return {};
  const std::string layer = "model.layers." + index + ".";
  if (rest == "ln_1.weight") return {{layer + "input_layernorm.weight"}};
  if (rest == "ln_2.weight") return {{layer + "post_attention_layernorm.weight"}};
  if (rest == "attn.proj.weight") return {{layer + "self_attn.o_proj.weight"}};
  if (rest == "mlp.down.weight") return {{layer + "mlp.down_proj.weight"}};
  if (rest == "attn.qkv.weight" && shape.size() == 2) {
    const std::int64_t q = shape[1], kv = (shape[0] - shape[1]) / 2;  // (C + 2 KV hs, C)
    return {{layer + "self_attn.q_proj.weight", false, false, 0, q},
            {layer + "self_attn.k_proj.weight", false, false, q, kv},
            {layer + "self_attn.v_proj.weight", false, false, q + kv, kv}};
  }
  if (rest == "mlp.gate_up.weight" && shape.size() == 2) {
    const std::int64_t f = shape[0] / 2;  // (2F, C)
    return {{layer + "mlp.gate_proj.weight", false, false, 0, f}, {layer + "mlp.up_proj.weight", false, false, f, f}};
  }
  return {};
}

// The piece's rows of the parameter: (rows, cols) and the offset of its first element.
struct PieceRows {
  std::int64_t rows, cols, offset;
};

PieceRows piece_rows(const HfTensorName& hf, const Shape& shape) {
  const std::int64_t cols = shape.size() >= 2 ? shape_numel(shape) / shape.at(0) : 1;
  const std::int64_t all = shape.empty() ? 1 : shape.at(0);
  const std::int64_t rows = hf.rows < 0 ? all : hf.rows;
  return {rows, cols, hf.row_begin * cols};
}

}  // namespace

std::vector<HfTensorName> hf_tensor_names(GptArchitecture architecture, const std::string& tessera_name,
                                          const Shape& shape) {
  return architecture == GptArchitecture::kLlama ? llama_names(tessera_name, shape) : gpt2_names(tessera_name);
}

Shape hf_shape(const HfTensorName& hf, const Shape& shape, std::int64_t vocab_rows) {
  if (hf.transposed) return {shape.at(1), shape.at(0)};
  if (hf.vocab_rows) return {vocab_rows, shape.at(1)};
  if (hf.rows >= 0) return {hf.rows, shape.at(1)};
  return shape;
}

std::vector<float> to_hf_layout(const HfTensorName& hf, const Shape& shape, const std::vector<float>& values,
                                std::int64_t vocab_rows) {
  if (hf.transposed) return transpose(values, shape.at(0), shape.at(1));
  if (hf.vocab_rows) return {values.begin(), values.begin() + vocab_rows * shape.at(1)};
  const PieceRows p = piece_rows(hf, shape);
  return {values.begin() + p.offset, values.begin() + p.offset + p.rows * p.cols};
}

void place_from_hf(const HfTensorName& hf, const Shape& shape, const Shape& stored, const std::vector<float>& values,
                   std::vector<float>& full) {
  if (hf.transposed) {
    const std::vector<float> back = transpose(values, stored.at(0), stored.at(1));
    std::copy(back.begin(), back.end(), full.begin());
    return;
  }
  const PieceRows p = piece_rows(hf, shape);
  const std::size_t n = std::min(values.size(), static_cast<std::size_t>(p.rows * p.cols));
  std::copy(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n), full.begin() + p.offset);
}

}  // namespace tessera
