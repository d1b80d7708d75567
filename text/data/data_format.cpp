// DataFormat names, and which tokenizer a dataset's ids belong to.
#include "tessera/text/data/data_format.hpp"

#include <stdexcept>

namespace tessera {

const char* data_format_name(DataFormat format) {
  switch (format) {
    case DataFormat::kDetect: return "detect";
    case DataFormat::kTessera: return "tessera";
    case DataFormat::kLlmc: return "llmc";
    case DataFormat::kNanoGpt: return "nanogpt";
  }
  return "?";
}

DataFormat parse_data_format(std::string_view text, std::string_view what) {
  if (text == "detect" || text == "auto") return DataFormat::kDetect;
  if (text == "tessera") return DataFormat::kTessera;
  if (text == "llmc") return DataFormat::kLlmc;
  if (text == "nanogpt") return DataFormat::kNanoGpt;
  throw std::invalid_argument(std::string(what) + ": unknown data format '" + std::string(text) +
                              "'; use detect (by the header), tessera, llmc or nanogpt (headerless uint16)");
}

TokenFileFormat token_file_format(DataFormat format) {
  return format == DataFormat::kNanoGpt ? TokenFileFormat::kRawUint16 : TokenFileFormat::kLlmc;
}

TokenDataset open_token_dataset(const std::vector<std::string>& paths, DataFormat format) {
  return TokenDataset(paths, token_file_format(format));
}

TokenizerSpec data_tokenizer(const TokenDataset& dataset, DataFormat format) {
  if (format == DataFormat::kNanoGpt) return gpt2_tokenizer_spec();
  if (dataset.tokenizer()) return *dataset.tokenizer();
  if (format == DataFormat::kTessera) {
    const std::vector<std::string> paths = dataset.paths();
    throw std::runtime_error((paths.empty() ? std::string("the data") : paths.front()) +
                             " has no tokenizer record (an llm.c shard, or written by an older tessera_prepare); "
                             "read it with the llmc format for GPT-2 tokens, or re-run tessera_prepare");
  }
  return gpt2_tokenizer_spec();
}

}  // namespace tessera
