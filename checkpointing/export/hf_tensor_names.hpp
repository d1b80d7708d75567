// Tessera's GPT parameters under Hugging Face names and layouts (GPT2LMHeadModel's and
// LlamaForCausalLM's state dicts). A parameter is stored as one Hugging Face tensor, or — where
// Tessera fuses layers Hugging Face keeps apart — as the row blocks of one.
//
// GPT-2:
//   embed.wte             transformer.wte.weight          (vocab, C): the padding rows dropped
//   embed.wpe             transformer.wpe.weight          (T, C)
//   h.N.ln_1.weight|bias  transformer.h.N.ln_1.weight|bias
//   h.N.attn.qkv.weight   transformer.h.N.attn.c_attn.weight   Conv1D (C, 3C): the (3C, C) Linear transposed
//   h.N.attn.qkv.bias     transformer.h.N.attn.c_attn.bias     (3C): [q | k | v], heads contiguous in each
//   h.N.attn.proj.*       transformer.h.N.attn.c_proj.*        weight transposed to (C, C)
//   h.N.ln_2.*            transformer.h.N.ln_2.*
//   h.N.mlp.fc.*          transformer.h.N.mlp.c_fc.*           weight transposed to (C, F)
//   h.N.mlp.proj.*        transformer.h.N.mlp.c_proj.*         weight transposed to (F, C)
//   ln_f.weight|bias      transformer.ln_f.weight|bias
//   head.weight           lm_head.weight                  untied heads only (vocab rows); a tied
//                                                         head is wte and not written, as Hugging Face's files do
// Llama (nn.Linear weights are (out, in) as Tessera's: nothing is transposed):
//   embed.wte             model.embed_tokens.weight       (vocab, C)
//   h.N.ln_1.weight       model.layers.N.input_layernorm.weight
//   h.N.attn.qkv.weight   model.layers.N.self_attn.q_proj.weight  rows [0, C)
//                         model.layers.N.self_attn.k_proj.weight  rows [C, C + KV hs)
//                         model.layers.N.self_attn.v_proj.weight  rows [C + KV hs, C + 2 KV hs)
//   h.N.attn.proj.weight  model.layers.N.self_attn.o_proj.weight
//   h.N.ln_2.weight       model.layers.N.post_attention_layernorm.weight
//   h.N.mlp.gate_up.weight model.layers.N.mlp.gate_proj.weight    rows [0, F)
//                          model.layers.N.mlp.up_proj.weight      rows [F, 2F)
//   h.N.mlp.down.weight   model.layers.N.mlp.down_proj.weight
//   ln_f.weight           model.norm.weight
//   head.weight           lm_head.weight                  (vocab, C)
// The rotary convention needs no permutation: Tessera rotates pairs (j, j + hs/2) of each head, as
// transformers' rotate_half does on these weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/model/modules/gpt.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {

struct HfTensorName {
  std::string name;            // "transformer.h.0.attn.c_attn.weight"
  bool transposed = false;     // a Linear weight (out, in) stored as Conv1D (in, out)
  bool vocab_rows = false;     // a token embedding or head: rows beyond the vocabulary are padding
  std::int64_t row_begin = 0;  // the rows [row_begin, row_begin + rows) of the Tessera parameter
  std::int64_t rows = -1;      // -1: every row
};

// The Hugging Face tensors Tessera parameter `tessera_name` of `shape` is stored as, in order; empty
// for a name outside the architecture's layout.
std::vector<HfTensorName> hf_tensor_names(GptArchitecture architecture, const std::string& tessera_name,
                                          const Shape& shape);

// The stored shape of the piece `hf` of a parameter of Tessera shape `shape` (vocab_rows rows kept
// of a vocabulary tensor; 2-D and transposed for a Conv1D weight).
Shape hf_shape(const HfTensorName& hf, const Shape& shape, std::int64_t vocab_rows);

// Tessera layout (all of the parameter's values) -> the piece `hf` in Hugging Face layout (hf_shape).
std::vector<float> to_hf_layout(const HfTensorName& hf, const Shape& shape, const std::vector<float>& values,
                                std::int64_t vocab_rows);
// The piece `hf` in Hugging Face layout (stored shape `stored`) written into `full` (the parameter's
// values in Tessera layout, numel of `shape`): transposed back, at its rows; rows of a vocabulary
// tensor missing from the file (the padding) are left as they are (zero in a fresh vector).
void place_from_hf(const HfTensorName& hf, const Shape& shape, const Shape& stored, const std::vector<float>& values,
                   std::vector<float>& full);

}  // namespace tessera
