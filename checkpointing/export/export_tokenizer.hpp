// The tokenizer files of a Hugging Face model directory export (tessera_ckpt export RUN DIR
// --format safetensors): what transformers' AutoTokenizer loads, for the tokenizer the run recorded
// (tokenizer_fields.hpp):
//   bytes  a byte-level BPE with no merges: token i is byte i (in GPT-2's byte-to-unicode
//          spelling), 256 is <|endoftext|> — the same ids as Tessera's byte tokenizer
//   bpe, gpt2  its vocab.json and merges.txt, rewritten as tokenizer.json + tokenizer_config.json
//   hf     its tokenizer.json, copied (with the tokenizer_config.json beside it, when there is one)
// A BPE run whose files are not at the recorded directory (GPT-2 data without its vocabulary files)
// gets none: the result says so.
#pragma once

#include <filesystem>
#include <string>

#include "tessera/checkpointing/format/run_config.hpp"

namespace tessera {

// Writes the tokenizer files of the run `config` recorded into `dir` (which exists); returns what
// it wrote, in words ("tokenizer.json, tokenizer_config.json (bpe, 512 tokens)"), or why it wrote
// nothing. Throws std::runtime_error naming a file that cannot be read or written.
std::string write_export_tokenizer(const RunConfig& config, const std::filesystem::path& dir);

}  // namespace tessera
