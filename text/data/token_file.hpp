// Token files on disk: the llm.c shard format, and headerless uint16 files (nanoGPT's train.bin).
//
// llm.c format (TokenFileFormat::kLlmc): a header of 256 little-endian int32 —
//   header[0] = 20240520 (magic), header[1] = version: 1 (tokens are uint16) or 2 (uint32, as llm.c
//   writes Llama 3's 128256-token vocabulary), header[2] = number of tokens, the rest zero —
// followed by that many little-endian tokens. Any llm.c / fineweb shard reads as is. Writing picks
// version 1 when every id fits uint16, else version 2.
// Raw format (TokenFileFormat::kRawUint16): the whole file is uint16 tokens. The format is always
// chosen by the caller, never guessed from the contents.
//
// Tessera's tokenizer record: files written by tessera_prepare say which tokenizer made them, in
// header ints that llm.c leaves zero (so llm.c still reads them as its own):
//   header[3] = 0x41525354 ("TSRA" little-endian: a record follows), header[4] = 1 (record version),
//   header[5] = tokenizer kind (1 bytes, 2 bpe, 3 gpt2, 4 hf), header[6] = its vocabulary size,
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

#include "tessera/text/data/file_identity.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"

namespace tessera {

enum class TokenFileFormat : std::uint8_t {
  kLlmc,       // 1024-byte header (magic 20240520, version 1 or 2, count), then uint16 or uint32 tokens
  kRawUint16,  // uint16 tokens only, no header (nanoGPT's prepare.py output)
};

inline constexpr std::int32_t kTokenFileMagic = 20240520;
inline constexpr std::int32_t kTokenFileVersion = 1;     // uint16 tokens
inline constexpr std::int32_t kTokenFileVersionU32 = 2;  // uint32 tokens
inline constexpr int kTokenFileHeaderInts = 256;
inline constexpr std::size_t kTokenFileHeaderBytes = kTokenFileHeaderInts * sizeof(std::int32_t);
inline constexpr std::int32_t kMaxTokenId = 65535;  // largest id a uint16 token file (version 1, raw) can hold
inline constexpr std::int32_t kTokenizerRecordMark = 0x41525354;
inline constexpr std::int32_t kTokenizerRecordVersion = 1;
inline constexpr int kTokenizerRecordDirInt = 16;  // first header int of the directory bytes
inline constexpr std::size_t kTokenizerRecordMaxDirBytes = (kTokenFileHeaderInts - kTokenizerRecordDirInt) * 4;

const char* token_file_format_name(TokenFileFormat format);  // "llmc", "raw-uint16"
// Parses "llmc" or "raw-uint16" (also "raw"); throws std::invalid_argument naming `what`.
TokenFileFormat parse_token_file_format(std::string_view text, std::string_view what = "token file format");

// Writes `tokens` to `path` in `format`: kLlmc as version 1 (uint16) when every id fits, else
// version 2 (uint32). Refuses negative ids, ids above 65535 in a raw file, and (kLlmc) more tokens
// than the int32 header can count. Writes "<path>.tmp-<pid>" and renames it over `path` when complete,
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
  // Bytes per token: 2 (version 1, raw) or 4 (version 2).
  int token_bytes() const { return token_bytes_; }
  // The tokens of a 2-byte file, or of a 4-byte one; std::logic_error for the other width.
  std::span<const std::uint16_t> tokens() const;
  std::span<const std::uint32_t> tokens32() const;
  std::int32_t token(std::int64_t i) const {  // 0 <= i < num_tokens(), unchecked
    return token_bytes_ == 2 ? static_cast<const std::uint16_t*>(tokens_)[i]
                             : static_cast<std::int32_t>(static_cast<const std::uint32_t*>(tokens_)[i]);
  }
  // out[0, count) = tokens [first, first + count), unchecked.
  void copy_tokens(std::int64_t first, std::int64_t count, std::int32_t* out) const;
  // The header's tokenizer record, its directory resolved against the file's directory; nullopt
  // when the file has none.
  const std::optional<TokenizerSpec>& tokenizer() const { return tokenizer_; }
  // Throws std::runtime_error naming the file when the file at its path is no longer the one opened
  // (replaced, truncated or grown, its header rewritten: FileIdentity), before anything reads tokens
  // that are not the run's any more (or a truncated mapping, which would end the process with SIGBUS).
  void check_unchanged() const;

 private:
  TokenFile() = default;
  void release() noexcept;

  std::string path_;
  TokenFileFormat format_ = TokenFileFormat::kLlmc;
  void* mapping_ = nullptr;  // whole file, read-only
  std::size_t mapping_bytes_ = 0;
  const void* tokens_ = nullptr;  // inside mapping_
  int token_bytes_ = 2;
  std::int64_t num_tokens_ = 0;
  std::optional<TokenizerSpec> tokenizer_;
  FileIdentity identity_;  // of the file opened
};

}  // namespace tessera
