// Token file writing (temporary file + rename) and mmap-based reading with header validation.
#include "tessera/text/data/token_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tessera {

static_assert(std::endian::native == std::endian::little,
              "token files are little-endian; reading them on a big-endian host needs byte swapping");

namespace {

std::string errno_text() { return std::strerror(errno); }

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

// Closes a file descriptor on scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(int fd, const void* data, std::size_t bytes, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, "write failed: " + errno_text());
    }
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

bool read_exact(int fd, void* data, std::size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::read(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

// The tokens as the file stores them: uint16 when every id fits (and always for a raw file, which
// refuses a larger one), else uint32. Negative ids are refused.
template <typename T>
std::vector<T> narrow_tokens(const std::string& path, std::span<const std::int32_t> tokens) {
  std::vector<T> out(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::int32_t t = tokens[i];
    if (t < 0) {
      throw std::invalid_argument(path + ": token " + std::to_string(i) + " is " + std::to_string(t) +
                                  ", negative; token ids start at 0");
    }
    out[i] = static_cast<T>(t);
  }
  return out;
}

std::int32_t largest_id(std::span<const std::int32_t> tokens) {
  std::int32_t most = 0;
  for (const std::int32_t t : tokens) most = std::max(most, t);
  return most;
}

// Checks an llm.c header against the file size; returns the token count.
std::int64_t check_llmc_header(const std::string& path, const std::array<std::int32_t, kTokenFileHeaderInts>& header,
                               std::int64_t file_bytes) {
  if (header[0] != kTokenFileMagic) {
    fail(path, "header magic is " + std::to_string(header[0]) + ", expected " + std::to_string(kTokenFileMagic) +
                   ": not an llm.c token file; if it holds raw uint16 tokens without a header (nanoGPT), "
                   "open it with the raw-uint16 format (train_gpt --data-format nanogpt)");
  }
  if (header[1] != kTokenFileVersion && header[1] != kTokenFileVersionU32) {
    fail(path, "header version is " + std::to_string(header[1]) + ", expected " + std::to_string(kTokenFileVersion) +
                   " (uint16 tokens) or " + std::to_string(kTokenFileVersionU32) +
                   " (uint32 tokens); re-create the file with tessera_prepare");
  }
  const std::int64_t width = header[1] == kTokenFileVersion ? 2 : 4;
  const std::int64_t count = header[2];
  if (count < 0) fail(path, "header says " + std::to_string(count) + " tokens (negative); the header is corrupt");
  const std::int64_t payload = file_bytes - static_cast<std::int64_t>(kTokenFileHeaderBytes);
  const std::int64_t expected = count * width;
  if (payload != expected) {
    const std::int64_t held = payload / width;
    std::string what = "header says " + std::to_string(count) + " tokens but the file holds " + std::to_string(held);
    if (payload % width != 0) what += width == 2 ? " and a half" : " and a part";
    what += payload < expected ? "; the file is truncated — re-run tessera_prepare"
                               : "; the file has extra bytes after the tokens — re-run tessera_prepare";
    fail(path, what);
  }
  return count;
}

using Header = std::array<std::int32_t, kTokenFileHeaderInts>;

void write_tokenizer_record(const std::string& path, const TokenizerSpec& spec, Header& header) {
  if (spec.dir.size() > kTokenizerRecordMaxDirBytes) {
    throw std::invalid_argument(path + ": the tokenizer directory '" + spec.dir + "' is longer than the " +
                                std::to_string(kTokenizerRecordMaxDirBytes) +
                                " bytes a token file header holds; write the token file nearer to it");
  }
  header[3] = kTokenizerRecordMark;
  header[4] = kTokenizerRecordVersion;
  header[5] = static_cast<std::int32_t>(spec.kind);
  header[6] = spec.vocab_size;
  header[7] = static_cast<std::int32_t>(static_cast<std::uint32_t>(spec.files_hash));
  header[8] = static_cast<std::int32_t>(static_cast<std::uint32_t>(spec.files_hash >> 32));
  header[9] = static_cast<std::int32_t>(spec.dir.size());
  std::memcpy(&header[kTokenizerRecordDirInt], spec.dir.data(), spec.dir.size());
}

// The record's vocabulary against the tokenizer it names: the byte tokenizer's and GPT-2's sizes are
// fixed; a learned BPE's ids must fit the file's tokens (uint16, or uint32 up to 2^31 - 1). A
// header's word is never trusted beyond what its tokenizer can have, since programs size models from it.
void check_record_vocab(const std::string& path, const TokenizerSpec& spec, std::int64_t token_bytes) {
  const std::int32_t vocab = spec.vocab_size;
  std::int32_t expected = 0;
  if (spec.kind == TokenizerKind::kBytes) expected = bytes_tokenizer_spec().vocab_size;
  if (spec.kind == TokenizerKind::kGpt2) expected = kGpt2VocabSize;
  if (expected != 0 && vocab != expected) {
    fail(path, "header[6] (the tokenizer record's vocabulary) is " + std::to_string(vocab) + " but the " +
                   tokenizer_kind_name(spec.kind) + " tokenizer it names has " + std::to_string(expected) +
                   " tokens; the header is corrupt — re-run tessera_prepare");
  }
  const std::int64_t most = token_bytes == 2 ? std::int64_t{kMaxTokenId} + 1 : std::numeric_limits<std::int32_t>::max();
  if (vocab < 1 || vocab > most) {
    fail(path, "header[6] (the tokenizer record's vocabulary) is " + std::to_string(vocab) + ", outside 1.." +
                   std::to_string(most) + " that a " + (token_bytes == 2 ? "uint16" : "uint32") +
                   " token file's tokenizer can have; the header is corrupt — re-run tessera_prepare");
  }
}

std::optional<TokenizerSpec> read_tokenizer_record(const std::string& path, const Header& header) {
  if (header[3] != kTokenizerRecordMark) return std::nullopt;
  if (header[4] != kTokenizerRecordVersion) {
    fail(path, "tokenizer record version is " + std::to_string(header[4]) + ", this build reads " +
                   std::to_string(kTokenizerRecordVersion) + "; use a newer Tessera or re-run tessera_prepare");
  }
  const std::int32_t kind = header[5];
  if (kind < static_cast<std::int32_t>(TokenizerKind::kBytes) || kind > static_cast<std::int32_t>(TokenizerKind::kHf)) {
    fail(path, "tokenizer record names an unknown tokenizer kind " + std::to_string(kind) + "; re-run tessera_prepare");
  }
  const std::int32_t dir_bytes = header[9];
  if (dir_bytes < 0 || static_cast<std::size_t>(dir_bytes) > kTokenizerRecordMaxDirBytes) {
    fail(path, "tokenizer record has a directory of " + std::to_string(dir_bytes) + " bytes; the header is corrupt");
  }
  TokenizerSpec spec;
  spec.kind = static_cast<TokenizerKind>(kind);
  spec.vocab_size = header[6];
  check_record_vocab(path, spec, header[1] == kTokenFileVersionU32 ? 4 : 2);
  spec.files_hash = static_cast<std::uint64_t>(static_cast<std::uint32_t>(header[7])) |
                    (static_cast<std::uint64_t>(static_cast<std::uint32_t>(header[8])) << 32);
  std::string dir(static_cast<std::size_t>(dir_bytes), '\0');
  std::memcpy(dir.data(), &header[kTokenizerRecordDirInt], dir.size());
  if (!dir.empty()) {
    const std::filesystem::path p(dir);
    const std::string resolved =
        (p.is_absolute() ? p : (std::filesystem::path(path).parent_path() / p)).lexically_normal().string();
    spec.dir = resolved.empty() ? std::string(".") : resolved;
    if (spec.dir.size() > 1 && spec.dir.back() == '/') spec.dir.pop_back();  // "data/." -> "data/" -> "data"
  }
  return spec;
}

}  // namespace

const char* token_file_format_name(TokenFileFormat format) {
  switch (format) {
    case TokenFileFormat::kLlmc: return "llmc";
    case TokenFileFormat::kRawUint16: return "raw-uint16";
  }
  return "?";
}

TokenFileFormat parse_token_file_format(std::string_view text, std::string_view what) {
  if (text == "llmc" || text == "llm.c") return TokenFileFormat::kLlmc;
  if (text == "raw-uint16" || text == "raw") return TokenFileFormat::kRawUint16;
  throw std::invalid_argument(std::string(what) + ": unknown token file format '" + std::string(text) +
                              "'; use llmc (256-int32 header, as written by tessera_prepare and llm.c) or "
                              "raw-uint16 (headerless uint16 tokens, as written by nanoGPT)");
}

void write_token_file(const std::string& path, std::span<const std::int32_t> tokens, TokenFileFormat format,
                      const std::optional<TokenizerSpec>& tokenizer) {
  if (tokenizer && format != TokenFileFormat::kLlmc) {
    throw std::invalid_argument(path +
                                ": a raw uint16 token file has no header to record the tokenizer in; "
                                "write the llmc format");
  }
  if (format == TokenFileFormat::kLlmc &&
      tokens.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    throw std::invalid_argument(path + ": " + std::to_string(tokens.size()) +
                                " tokens do not fit the int32 count of one llm.c token file; split them into "
                                "several files (shards) of at most 2147483647 tokens");
  }
  const bool wide = largest_id(tokens) > kMaxTokenId;
  if (wide && format != TokenFileFormat::kLlmc) {
    throw std::invalid_argument(path + ": token id " + std::to_string(largest_id(tokens)) +
                                " does not fit a raw uint16 token file; write the llmc format (uint32 tokens)");
  }
  const std::vector<std::uint16_t> narrow =
      wide ? std::vector<std::uint16_t>{} : narrow_tokens<std::uint16_t>(path, tokens);
  const std::vector<std::uint32_t> words =
      wide ? narrow_tokens<std::uint32_t>(path, tokens) : std::vector<std::uint32_t>{};
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail(path, "cannot create " + tmp + ": " + errno_text() + "; check that the directory exists and is writable");
  try {
    FdCloser closer{fd};
    if (format == TokenFileFormat::kLlmc) {
      std::array<std::int32_t, kTokenFileHeaderInts> header{};
      header[0] = kTokenFileMagic;
      header[1] = wide ? kTokenFileVersionU32 : kTokenFileVersion;
      header[2] = static_cast<std::int32_t>(tokens.size());
      if (tokenizer) write_tokenizer_record(path, *tokenizer, header);
      write_all(fd, header.data(), kTokenFileHeaderBytes, tmp);
    }
    if (wide) {
      write_all(fd, words.data(), words.size() * sizeof(std::uint32_t), tmp);
    } else {
      write_all(fd, narrow.data(), narrow.size() * sizeof(std::uint16_t), tmp);
    }
    if (::fsync(fd) != 0) fail(tmp, "fsync failed: " + errno_text());
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = errno_text();
    ::unlink(tmp.c_str());
    fail(path, "cannot rename " + tmp + " to it: " + reason);
  }
}

TokenFile TokenFile::open(const std::string& path, TokenFileFormat format) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open token file: " + errno_text());
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, "cannot stat: " + errno_text());
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  const std::int64_t file_bytes = st.st_size;

  std::size_t offset = 0;
  std::int64_t count = 0;
  std::optional<TokenizerSpec> file_tokenizer;
  int token_bytes = 2;
  if (format == TokenFileFormat::kLlmc) {
    if (file_bytes < static_cast<std::int64_t>(kTokenFileHeaderBytes)) {
      fail(path, "file is " + std::to_string(file_bytes) + " bytes, shorter than the " +
                     std::to_string(kTokenFileHeaderBytes) +
                     "-byte llm.c header; the file is truncated or is "
                     "not an llm.c token file (for headerless uint16 tokens use the raw-uint16 format)");
    }
    std::array<std::int32_t, kTokenFileHeaderInts> header{};
    if (!read_exact(fd, header.data(), kTokenFileHeaderBytes)) fail(path, "cannot read the header: " + errno_text());
    count = check_llmc_header(path, header, file_bytes);
    offset = kTokenFileHeaderBytes;
    token_bytes = header[1] == kTokenFileVersionU32 ? 4 : 2;
    file_tokenizer = read_tokenizer_record(path, header);
  } else {
    if (file_bytes % 2 != 0) {
      fail(path, "raw uint16 token file has an odd size (" + std::to_string(file_bytes) +
                     " bytes); the file is truncated or is not a uint16 token file");
    }
    count = file_bytes / 2;
    std::int32_t first = 0;
    if (file_bytes >= 4 && read_exact(fd, &first, sizeof(first)) && first == kTokenFileMagic) {
      fail(path, "opened as raw uint16 tokens but it starts with the llm.c header magic " +
                     std::to_string(kTokenFileMagic) + "; open it with the llmc format");
    }
  }

  TokenFile file;
  file.identity_ = FileIdentity::of(fd, path);
  file.path_ = path;
  file.format_ = format;
  file.num_tokens_ = count;
  file.token_bytes_ = token_bytes;
  file.tokenizer_ = std::move(file_tokenizer);
  if (file_bytes > 0) {
    void* mapping = ::mmap(nullptr, static_cast<std::size_t>(file_bytes), PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) fail(path, "mmap failed: " + errno_text());
    file.mapping_ = mapping;
    file.mapping_bytes_ = static_cast<std::size_t>(file_bytes);
    file.tokens_ = static_cast<const char*>(mapping) + offset;
  }
  return file;
}

std::span<const std::uint16_t> TokenFile::tokens() const {
  if (token_bytes_ != 2) throw std::logic_error(path_ + " holds uint32 tokens: read them with tokens32()");
  return {static_cast<const std::uint16_t*>(tokens_), static_cast<std::size_t>(num_tokens_)};
}

std::span<const std::uint32_t> TokenFile::tokens32() const {
  if (token_bytes_ != 4) throw std::logic_error(path_ + " holds uint16 tokens: read them with tokens()");
  return {static_cast<const std::uint32_t*>(tokens_), static_cast<std::size_t>(num_tokens_)};
}

void TokenFile::copy_tokens(std::int64_t first, std::int64_t count, std::int32_t* out) const {
  if (token_bytes_ == 2) {
    const std::uint16_t* src = static_cast<const std::uint16_t*>(tokens_) + first;
    for (std::int64_t k = 0; k < count; ++k) out[k] = src[k];
  } else {
    const std::uint32_t* src = static_cast<const std::uint32_t*>(tokens_) + first;
    for (std::int64_t k = 0; k < count; ++k) out[k] = static_cast<std::int32_t>(src[k]);
  }
}

TokenFile::TokenFile(TokenFile&& other) noexcept { *this = std::move(other); }

TokenFile& TokenFile::operator=(TokenFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    format_ = other.format_;
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    tokens_ = std::exchange(other.tokens_, nullptr);
    token_bytes_ = other.token_bytes_;
    num_tokens_ = std::exchange(other.num_tokens_, 0);
    tokenizer_ = std::exchange(other.tokenizer_, std::nullopt);
    identity_ = other.identity_;
  }
  return *this;
}

void TokenFile::check_unchanged() const {
  if (const std::string change = identity_.what_changed(path_); !change.empty()) {
    throw std::runtime_error(path_ + ": the data file changed while the run was reading it: " + change +
                             ". Its samples are no longer the ones the run started with; write a new data file "
                             "to another path (tessera_prepare --out), then resume from the last checkpoint");
  }
}

TokenFile::~TokenFile() { release(); }

void TokenFile::release() noexcept {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
  mapping_bytes_ = 0;
  tokens_ = nullptr;
  num_tokens_ = 0;
}

}  // namespace tessera
