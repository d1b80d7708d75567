// ModelSpec: what the planner plans for — a GPT architecture (Tessera's GPT-2 layout: layers,
// channels, heads, vocabulary, sequence length), from a preset or given field by field; a model of
// your own (CustomModel: any Module, its micro-batch and its training step); or only a raw parameter
// count (then only model state can be planned, not activations).
//
// Presets (name: L, C, NH, V, T):
//   tiny            2,    9,  3,    13,    6   the sharding tests' model (uneven shards)
//   small           6,  384,  6,  8192,  256   bench_sharding / bench_activation_ckpt
//   gpt2-124m      12,  768, 12, 50257, 1024
//   gpt2-350m      24, 1024, 16, 50257, 1024
//   gpt2-774m      36, 1280, 20, 50257, 1024
//   gpt2-1.5b      48, 1600, 25, 50257, 1024
//   llama-7b-shaped  32, 4096, 32, 32000, 2048   (LLaMA-7B's width and depth in the GPT-2 layout:
//   llama-13b-shaped 40, 5120, 40, 32000, 2048    4C MLP, tied head, learned positions)
// Llama layout (name: L, C, NH, V, T, KV heads, F, rope theta; untied head):
//   llama-tiny       2,   16,  4,     13,    6,  2,    24,  10000   the tests' model
//   llama2-7b       32, 4096, 32,  32000, 4096, 32, 11008,  10000
//   llama3-8b       32, 4096, 32, 128256, 8192,  8, 14336, 500000
//   llama3-70b      80, 8192, 64, 128256, 8192,  8, 28672, 500000
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/model/modules/gpt.hpp"
#include "tessera/planning/custom_model.hpp"

namespace tessera {

struct ModelSpec {
  std::string name;                 // preset name, "custom", the custom model's name, or "<N> parameters"
  std::optional<GptConfig> gpt;     // the architecture; activations are planned with it or `custom`
  std::int64_t raw_parameters = 0;  // used when gpt and custom are empty
  std::optional<CustomModel> custom = std::nullopt;  // a model of your own (model_from_module); gpt must be empty

  // Whether a training step can be planned (an architecture or a model of your own), not only the
  // model state of a parameter count.
  bool plans_step() const { return gpt || custom; }
  std::int64_t parameter_count() const;  // a custom model is built (not materialised) to count them
  std::string describe() const;          // "gpt2-124m: L=12 C=768 NH=12 V=50257 T=1024, 124.44M parameters"
};

// The preset of that name; throws std::invalid_argument listing the presets otherwise.
ModelSpec model_preset(const std::string& name);
std::vector<std::string> model_preset_names();

// A model of your own, named `name` in the plan's report (CustomModel).
ModelSpec model_from_module(std::string name, CustomModel model);

// A model given only by its parameter count.
ModelSpec model_from_parameter_count(std::int64_t parameters);

// Parses "124M", "7B", "1.5e9", "350000000" into a count (K, M, B/G, T = 10^3, 10^6, 10^9, 10^12).
// Throws std::invalid_argument naming `what` otherwise.
std::int64_t parse_count(const std::string& text, const std::string& what);

// Parses "80GB", "24GiB", "512MiB", "1.5TB", "1000000" (bytes) into bytes; KB/MB/GB/TB are powers
// of 10, KiB/MiB/GiB/TiB powers of 2.
std::int64_t parse_bytes(const std::string& text, const std::string& what);

// Parameters per sharding unit under the default unit policy, in the engine's order: embed,
// h.0 .. h.{L-1}, and the root's own (ln_f, with the head's weight when untied): GptConfig's counts.
// With `f32_apart` (a run whose compute or parameter dtype is not f32), each unit's norm parameters
// follow it as a unit of their own ("h.0 (f32)", f32 set), as partition_units cuts them.
struct UnitSize {
  std::string name;
  std::int64_t numel;
  bool f32 = false;  // the norm parameters, kept in f32
};
std::vector<UnitSize> gpt_unit_sizes(const GptConfig& config, bool f32_apart = false);

}  // namespace tessera
