// config.json in Hugging Face's GPT2Config form, written beside a safetensors export and read back
// by --init-from, tessera_eval and tools that load Hugging Face models:
//   {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 257, "n_positions": 128,
//    "n_ctx": 128, "n_embd": 256, "n_layer": 4, "n_head": 4, "n_inner": null,
//    "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05, "tie_word_embeddings": true,
//    "bos_token_id": 256, "eos_token_id": 256, "torch_dtype": "float32", dropouts 0.0, ...,
//    "tessera_padded_vocab_size": 320, "tessera_step": 500}
// (bos/eos: the last token of the vocabulary, GPT-2's <|endoftext|> and the byte tokenizer's end-of-text.)
#pragma once

#include <cstdint>
#include <filesystem>

#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera {

// `model`: a checkpoint's model fields (vocab_size, max_seq_len, layers, heads, channels).
void write_hf_gpt2_config(const std::filesystem::path& path, const RunConfig& model, std::int64_t vocab_size,
                          DType dtype, std::int64_t step);

// The model fields of a config.json: vocab_size (the file's, unpadded), max_seq_len, layers,
// heads, channels. CheckpointError naming the file and key when the file is not a JSON object, when
// model_type is not the string "gpt2", when a size is missing or not a positive integer (a string,
// fraction, bool or null is refused, never converted), or when the sizes make no GPT. A field that
// changes the computation is read too, and a value Tessera's GPT-2 does not compute is refused
// (kConfigMismatch naming the field and its value): activation_function other than gelu_new /
// gelu_pytorch_tanh, layer_norm_epsilon other than 1e-5, n_inner other than 4 * n_embd,
// tie_word_embeddings false, scale_attn_weights false, scale_attn_by_inverse_layer_idx true,
// add_cross_attention true, n_ctx other than n_positions. Dropout probabilities are accepted: Tessera
// trains without dropout.
RunConfig read_hf_gpt2_config(const std::filesystem::path& path);

// Model fields from a Hugging Face export against a run's: layers, heads, channels and
// max_seq_len must be equal; the file's vocab_size may be smaller (the run pads it). kConfigMismatch naming the field.
void check_hf_model_fields(const RunConfig& stored, const RunConfig& expected, const std::string& where);

}  // namespace tessera
