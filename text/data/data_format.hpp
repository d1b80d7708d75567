// DataFormat: how a program reads its token files and which tokenizer their ids belong to.
//   detect   (default) the llm.c header: with Tessera's tokenizer record (token_file.hpp), the
//            recorded tokenizer; without one, an llm.c shard of GPT-2 tokens
//   tessera  the llm.c header with a tokenizer record (refuses files without one)
//   llmc     the llm.c header; GPT-2 tokens unless the file records another tokenizer
//   nanogpt  headerless uint16 GPT-2 tokens (nanoGPT's train.bin); never detected, only asked for
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/text/data/token_dataset.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"

namespace tessera {

enum class DataFormat : std::uint8_t { kDetect, kTessera, kLlmc, kNanoGpt };

const char* data_format_name(DataFormat format);  // "detect", "tessera", "llmc", "nanogpt"
// Throws std::invalid_argument naming `what` for anything else.
DataFormat parse_data_format(std::string_view text, std::string_view what);

// The token file format files of `format` are opened with.
TokenFileFormat token_file_format(DataFormat format);

// Opens `paths` (token_dataset.hpp) in `format`.
TokenDataset open_token_dataset(const std::vector<std::string>& paths, DataFormat format);

// The tokenizer of `dataset`'s ids (see the list above). Throws std::runtime_error for kTessera
// files without a record, naming the file.
TokenizerSpec data_tokenizer(const TokenDataset& dataset, DataFormat format);

}  // namespace tessera
