// Tokenizer files beside a Hugging Face model directory export.
#include "tessera/checkpointing/export/export_tokenizer.hpp"

#include "tessera/checkpointing/export/tokenizer_fields.hpp"
#include "tessera/text/tokenizer/bpe_vocabulary.hpp"
#include "tessera/text/tokenizer/byte_unicode.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_reader.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_writer.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

// The byte tokenizer as a BPE without merges: ids 0..255 the bytes, 256 end-of-text.
BpeVocabulary byte_vocabulary() {
  BpeVocabulary v;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(bytes_to_token_text(std::string(1, static_cast<char>(b))));
  v.tokens.emplace_back(kEndOfTextToken);
  return v;
}

void copy_tokenizer_file(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) throw std::runtime_error("cannot copy " + from.string() + " to " + to.string() + ": " + ec.message());
}

}  // namespace

std::string write_export_tokenizer(const RunConfig& config, const fs::path& dir) {
  const std::optional<TokenizerSpec> spec = stored_tokenizer(config);
  if (!spec) return "no tokenizer files: the checkpoint does not record its tokenizer";
  const std::string written =
      std::string(kHfTokenizerFileName) + ", " + kHfTokenizerConfigFileName + " (" + spec->describe() + ")";
  switch (spec->kind) {
    case TokenizerKind::kBytes: write_hf_tokenizer_files(dir, byte_vocabulary()); return written;
    case TokenizerKind::kBpe:
    case TokenizerKind::kGpt2: {
      std::error_code ec;
      if (spec->dir.empty() || !fs::exists(fs::path(spec->dir) / kVocabFileName, ec)) {
        return "no tokenizer files: the run's " + std::string(tokenizer_kind_name(spec->kind)) +
               " vocabulary files are not at " + (spec->dir.empty() ? "a recorded directory" : spec->dir) +
               " (copy vocab.json and merges.txt beside the model, or pass --tokenizer when loading it)";
      }
      write_hf_tokenizer_files(dir, read_bpe_vocabulary(spec->dir));
      return written;
    }
    case TokenizerKind::kHf: {
      const fs::path file = hf_tokenizer_file(spec->dir);
      copy_tokenizer_file(file, dir / kHfTokenizerFileName);
      std::error_code ec;
      if (fs::exists(file.parent_path() / kHfTokenizerConfigFileName, ec)) {
        copy_tokenizer_file(file.parent_path() / kHfTokenizerConfigFileName, dir / kHfTokenizerConfigFileName);
      }
      return written;
    }
  }
  return "no tokenizer files";
}

}  // namespace tessera
