// config.json in Hugging Face's form, written beside a safetensors export and read back by
// --init-from, tessera_eval and tools that load Hugging Face models. A GPT-2 as GPT2Config:
//   {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 257, "n_positions": 128,
//    "n_ctx": 128, "n_embd": 256, "n_layer": 4, "n_head": 4, "n_inner": null,
//    "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05, "tie_word_embeddings": true, ...}
// a Llama as LlamaConfig:
//   {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 257, "hidden_size": 256,
//    "intermediate_size": 768, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
//    "head_dim": 64, "max_position_embeddings": 128, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
//    "hidden_act": "silu", "attention_bias": false, "mlp_bias": false, "tie_word_embeddings": false, ...}
// both with "bos_token_id" / "eos_token_id" the last token of the vocabulary (GPT-2's <|endoftext|>
// and the byte tokenizer's end-of-text), "torch_dtype", "tessera_padded_vocab_size" and "tessera_step".
#pragma once

#include <cstdint>
#include <filesystem>

#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera {

// `model`: a checkpoint's model fields (gpt_model_fields.hpp).
void write_hf_config(const std::filesystem::path& path, const RunConfig& model, std::int64_t vocab_size, DType dtype,
                     std::int64_t step);

// The model fields (gpt_model_fields.hpp) of a config.json, vocab_size the file's (unpadded).
// CheckpointError naming the file and key when the file is not a JSON object, when model_type is
// neither "gpt2" nor "llama", when a size is missing or not a positive integer (a string, fraction,
// bool or null is refused, never converted), or when the sizes make no such model. Every field
// that changes the computation is read: a value Tessera computes is taken (GPT-2: n_inner,
// layer_norm_epsilon, tie_word_embeddings; Llama: num_key_value_heads, intermediate_size,
// rms_norm_eps, rope_theta, tie_word_embeddings), any other refused (kConfigMismatch naming the
// field and its value): GPT-2's activation_function other than gelu_new / gelu_pytorch_tanh,
// scale_attn_weights false, scale_attn_by_inverse_layer_idx true, add_cross_attention true, n_ctx
// other than n_positions; Llama's hidden_act other than silu, attention_bias or mlp_bias true,
// rope_scaling set (or rope_parameters other than {"rope_type": "default", "rope_theta": ...},
// transformers 5's form), head_dim other than hidden_size / num_attention_heads, pretraining_tp
// other than 1. A field neither reads nor knows to leave the computation alone is refused by name.
// Dropout probabilities are accepted: Tessera trains without dropout.
RunConfig read_hf_config(const std::filesystem::path& path);

// Model fields from a Hugging Face export against a run's: every field must be equal (a field absent
// on one side is its default), except that the file's vocab_size may be smaller (the run pads it).
// kConfigMismatch naming the field.
void check_hf_model_fields(const RunConfig& stored, const RunConfig& expected, const std::string& where);

}  // namespace tessera
