// Tessera's GPT parameters under Hugging Face GPT-2 names and layouts (GPT2LMHeadModel's state dict):
//
//   embed.wte             transformer.wte.weight          (vocab, C): the padding rows dropped
//   embed.wpe             transformer.wpe.weight          (T, C)
//   h.N.ln_1.weight|bias  transformer.h.N.ln_1.weight|bias
//   h.N.attn.qkv.weight   transformer.h.N.attn.c_attn.weight   Conv1D (C, 3C): the (3C, C) Linear transposed
//   h.N.attn.qkv.bias     transformer.h.N.attn.c_attn.bias     (3C): [q | k | v], heads contiguous in each
//   h.N.attn.proj.*       transformer.h.N.attn.c_proj.*        weight transposed to (C, C)
//   h.N.ln_2.*            transformer.h.N.ln_2.*
//   h.N.mlp.fc.*          transformer.h.N.mlp.c_fc.*           weight transposed to (C, 4C)
//   h.N.mlp.proj.*        transformer.h.N.mlp.c_proj.*         weight transposed to (4C, C)
//   ln_f.weight|bias      transformer.ln_f.weight|bias
// lm_head.weight is tied to transformer.wte.weight and not written (as Hugging Face's own files do).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/runtime/tensor.hpp"

namespace tessera {

struct HfTensorName {
  std::string name;         // "transformer.h.0.attn.c_attn.weight"
  bool transposed = false;  // a Linear weight (out, in) stored as Conv1D (in, out)
  bool vocab_rows = false;  // the token embedding: rows beyond the vocabulary are padding
};

// The Hugging Face name and layout of a Tessera GPT parameter; std::nullopt for a name outside the GPT-2 layout.
std::optional<HfTensorName> hf_gpt2_name(const std::string& tessera_name);

// The stored shape of a parameter of Tessera shape `shape` (2-D when transposed; vocab rows kept).
Shape hf_shape(const HfTensorName& hf, const Shape& shape, std::int64_t vocab_rows);

// Tessera layout (shape) -> Hugging Face layout (hf_shape): transposes, keeps the first vocab_rows rows.
std::vector<float> to_hf_layout(const HfTensorName& hf, const Shape& shape, const std::vector<float>& values,
                                std::int64_t vocab_rows);
// Hugging Face layout (stored shape `stored`) -> Tessera layout of `shape`: transposes back; rows of
// the token embedding missing from the file (the padding) are zero.
std::vector<float> from_hf_layout(const HfTensorName& hf, const Shape& shape, const Shape& stored,
                                  const std::vector<float>& values);

}  // namespace tessera
