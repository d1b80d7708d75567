// Token files on disk: the llm.c shard format, and headerless uint16 files (nanoGPT's train.bin).
//
// llm.c format (TokenFileFormat::kLlmc): a header of 256 little-endian int32 —
//   header[0] = 20240520 (magic), header[1] = 1 (version: tokens are uint16),
//   header[2] = number of tokens, the rest zero —
// followed by that many little-endian uint16 tokens. Any llm.c / fineweb shard reads as is.
// Raw format (TokenFileFormat::kRawUint16): the whole file is uint16 tokens. The format is always
// chosen by the caller, never guessed from the contents.
//
// Tessera's tokenizer record: files written by tessera_prepare say which tokenizer made them, in
// header ints that llm.c leaves zero (so llm.c still reads them as its own):
//   header[3] = 0x41525354 ("TSRA" little-endian: a record follows), header[4] = 1 (record version),
//   header[5] = tokenizer kind (1 bytes, 2 bpe, 3 gpt2), header[6] = its vocabulary size,
//   header[7], header[8] = low and high 32 bits of the vocab.json + merges.txt XXH64 (0: none),
//   header[9] = length in bytes of the tokenizer directory, header[16..255] = the directory (UTF-8,
//   up to 960 bytes; relative paths are relative to the token file's directory).
// Files without it (llm.c shards, files from older tessera_prepare) have no record.
//
// TokenFile maps the file read-only (mmap), so ranks on one node share one copy in the page cache.
// Do not rewrite a file in place while it is open (write_token_file replaces files by rename, which
// is safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tessera/text/tokenizer/tokenizer_spec.hpp"

namespace tessera {

enum class TokenFileFormat : std::uint8_t {
  kLlmc,       // 1024-byte header (magic 20240520, version 1, count), then uint16 tokens
  kRawUint16,  // uint16 tokens only, no header (nanoGPT's prepare.py output)
};

inline constexpr std::int32_t kTokenFileMagic = 20240520;
inline constexpr std::int32_t kTokenFileVersion = 1;  // uint16 tokens
inline constexpr int kTokenFileHeaderInts = 256;
inline constexpr std::size_t kTokenFileHeaderBytes = kTokenFileHeaderInts * sizeof(std::int32_t);
inline constexpr std::int32_t kMaxTokenId = 65535;  // largest id a uint16 token file can hold
inline constexpr std::int32_t kTokenizerRecordMark = 0x41525354;
inline constexpr std::int32_t kTokenizerRecordVersion = 1;
inline constexpr int kTokenizerRecordDirInt = 16;  // first header int of the directory bytes
inline constexpr std::size_t kTokenizerRecordMaxDirBytes = (kTokenFileHeaderInts - kTokenizerRecordDirInt) * 4;

const char* token_file_format_name(TokenFileFormat format);  // "llmc", "raw-uint16"
// Parses "llmc" or "raw-uint16" (also "raw"); throws std::invalid_argument naming `what`.
TokenFileFormat parse_token_file_format(std::string_view text, std::string_view what = "token file format");

// Writes `tokens` to `path` in `format`. Refuses ids outside 0..65535, and (kLlmc) more tokens than
// the int32 header can count. Writes "<path>.tmp-<pid>" and renames it over `path` when complete,
// so an interrupted write never leaves a partial file under the real name. The parent directory
// must exist. `tokenizer` (kLlmc only) is recorded in the header as given (a relative dir stays
// relative to the file's directory). Throws std::invalid_argument (bad ids, a tokenizer record
// for a raw file, a directory longer than 960 bytes) or std::runtime_error (I/O), naming the path.
void write_token_file(const std::string& path, std::span<const std::int32_t> tokens,
                      TokenFileFormat format = TokenFileFormat::kLlmc,
                      const std::optional<TokenizerSpec>& tokenizer = std::nullopt);

class TokenFile {
 public:
  // Opens and validates `path`. Throws std::runtime_error naming the file and what is wrong
  // (missing, bad magic, unsupported version, size that disagrees with the header, a tokenizer
  // record whose vocabulary its tokenizer cannot have: bytes 257, gpt2 50257, bpe 1..65536).
  static TokenFile open(const std::string& path, TokenFileFormat format = TokenFileFormat::kLlmc);

  TokenFile(TokenFile&& other) noexcept;
  TokenFile& operator=(TokenFile&& other) noexcept;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;
  ~TokenFile();  // unmaps; never throws

  const std::string& path() const { return path_; }
  TokenFileFormat format() const { return format_; }
  std::int64_t num_tokens() const { return num_tokens_; }
  std::span<const std::uint16_t> tokens() const { return {tokens_, static_cast<std::size_t>(num_tokens_)}; }
  std::int32_t token(std::int64_t i) const { return tokens_[i]; }  // 0 <= i < num_tokens(), unchecked
  // The header's tokenizer record, its directory resolved against the file's directory; nullopt
  // when the file has none.
  const std::optional<TokenizerSpec>& tokenizer() const { return tokenizer_; }

 private:
  TokenFile() = default;
  void release() noexcept;

  std::string path_;
  TokenFileFormat format_ = TokenFileFormat::kLlmc;
  void* mapping_ = nullptr;  // whole file, read-only
  std::size_t mapping_bytes_ = 0;
  const std::uint16_t* tokens_ = nullptr;  // inside mapping_
  std::int64_t num_tokens_ = 0;
  std::optional<TokenizerSpec> tokenizer_;
};

}  // namespace tessera
