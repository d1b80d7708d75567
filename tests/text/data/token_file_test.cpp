// Tests for token files: llm.c-format round trip and byte layout, every corruption error with its
// message, the raw uint16 format, refusal of ids that do not fit, and atomic replacement.
#include "tessera/text/data/token_file.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {
namespace {

namespace fs = std::filesystem;

class TokenFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tessera_token_file_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::vector<std::int32_t> ramp(int n, int scale = 7) {
  std::vector<std::int32_t> tokens(n);
  for (int i = 0; i < n; ++i) tokens[i] = (i * scale) % 65536;
  return tokens;
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void set_header_int(const std::string& path, int index, std::int32_t value) {
  std::vector<char> bytes = read_bytes(path);
  std::memcpy(bytes.data() + index * 4, &value, 4);
  write_bytes(path, bytes);
}

// The message of the std::runtime_error that `open` throws, or "" when it does not throw.
std::string open_error(const std::string& path, TokenFileFormat format = TokenFileFormat::kLlmc) {
  try {
    TokenFile::open(path, format);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST_F(TokenFileTest, LlmcRoundTripAndLayout) {
  const std::vector<std::int32_t> tokens = {0, 1, 255, 256, 1000, 65535, 42};
  const std::string file = path("x.bin");
  write_token_file(file, tokens);

  const std::vector<char> bytes = read_bytes(file);
  ASSERT_EQ(bytes.size(), 1024u + 2 * tokens.size());
  std::array<std::int32_t, 256> header{};
  std::memcpy(header.data(), bytes.data(), 1024);
  EXPECT_EQ(header[0], 20240520) << "magic";
  EXPECT_EQ(header[1], 1) << "version";
  EXPECT_EQ(header[2], 7) << "token count";
  for (int i = 3; i < 256; ++i) EXPECT_EQ(header[i], 0) << "header[" << i << "]";
  std::uint16_t sixth = 0;
  std::memcpy(&sixth, bytes.data() + 1024 + 2 * 5, 2);
  EXPECT_EQ(sixth, 65535) << "token 5 stored as little-endian uint16";

  const TokenFile read = TokenFile::open(file);
  EXPECT_EQ(read.path(), file);
  EXPECT_EQ(read.format(), TokenFileFormat::kLlmc);
  ASSERT_EQ(read.num_tokens(), 7);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(read.token(i), tokens[i]) << "token " << i;
}

TEST_F(TokenFileTest, LargerRoundTripAndMove) {
  const std::vector<std::int32_t> tokens = ramp(100000);
  write_token_file(path("big.bin"), tokens);
  TokenFile first = TokenFile::open(path("big.bin"));
  TokenFile moved = std::move(first);
  ASSERT_EQ(moved.num_tokens(), 100000);
  const auto span = moved.tokens();
  for (int i = 0; i < 100000; ++i) {
    ASSERT_EQ(span[i], tokens[i]) << "token " << i;
  }
}

TEST_F(TokenFileTest, EmptyFileRoundTrip) {
  write_token_file(path("empty.bin"), std::vector<std::int32_t>{});
  EXPECT_EQ(fs::file_size(path("empty.bin")), 1024u);
  EXPECT_EQ(TokenFile::open(path("empty.bin")).num_tokens(), 0);
}

TEST_F(TokenFileTest, WriteLeavesNoTemporaryFileAndReplacesOld) {
  write_token_file(path("x.bin"), ramp(10));
  write_token_file(path("x.bin"), ramp(20));
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  ASSERT_EQ(names.size(), 1u) << "first extra file: " << (names.size() > 1 ? names[1] : "");
  EXPECT_EQ(names[0], "x.bin");
  EXPECT_EQ(TokenFile::open(path("x.bin")).num_tokens(), 20);
}

TEST_F(TokenFileTest, WriteRefusesNegativeIds) {
  const std::string file = path("bad.bin");
  std::vector<std::int32_t> tokens = {1, 2, 3, -1};
  try {
    write_token_file(file, tokens);
    FAIL() << "id -1 was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_NE(message.find("token 3 is -1"), std::string::npos) << message;
  }
  EXPECT_FALSE(fs::exists(file)) << "a refused write must not create the file";
}

// Ids beyond uint16 (Llama 3's 128256-token vocabulary) are written as llm.c does for them:
// version 2, uint32 tokens; a raw file, which has no header to say so, refuses them.
TEST_F(TokenFileTest, IdsBeyondUint16WriteVersion2WithUint32Tokens) {
  const std::string file = path("wide.bin");
  const std::vector<std::int32_t> tokens = {0, 65535, 65536, 128255, 7, 2147483647};
  write_token_file(file, tokens, TokenFileFormat::kLlmc, gpt2_tokenizer_spec());
  const std::vector<char> bytes = read_bytes(file);
  ASSERT_EQ(bytes.size(), kTokenFileHeaderBytes + tokens.size() * 4);
  std::int32_t version = 0;
  std::memcpy(&version, bytes.data() + 4, 4);
  EXPECT_EQ(version, kTokenFileVersionU32);
  const TokenFile read = TokenFile::open(file);
  EXPECT_EQ(read.token_bytes(), 4);
  ASSERT_EQ(read.num_tokens(), static_cast<std::int64_t>(tokens.size()));
  for (std::size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(read.token(static_cast<std::int64_t>(i)), tokens[i]);
  std::vector<std::int32_t> copied(3);
  read.copy_tokens(2, 3, copied.data());
  EXPECT_EQ(copied, (std::vector<std::int32_t>{65536, 128255, 7}));
  EXPECT_EQ(read.tokens32()[3], 128255u);
  EXPECT_THROW(read.tokens(), std::logic_error);
  ASSERT_TRUE(read.tokenizer().has_value());
  EXPECT_EQ(read.tokenizer()->kind, TokenizerKind::kGpt2);
  // Ids that fit stay version 1, uint16, readable by every llm.c tool.
  write_token_file(file, ramp(8));
  EXPECT_EQ(TokenFile::open(file).token_bytes(), 2);
  EXPECT_THROW(TokenFile::open(file).tokens32(), std::logic_error);
  try {
    write_token_file(path("raw.bin"), tokens, TokenFileFormat::kRawUint16);
    FAIL() << "a raw file took id 65536";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("token id 2147483647 does not fit a raw uint16 token file"), std::string::npos)
        << e.what();
  }
}

TEST_F(TokenFileTest, WriteToMissingDirectoryNamesPath) {
  const std::string file = path("no/such/dir/x.bin");
  try {
    write_token_file(file, ramp(4));
    FAIL() << "write into a missing directory succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
  }
}

TEST_F(TokenFileTest, BadMagicIsRefused) {
  const std::string file = path("magic.bin");
  write_token_file(file, ramp(16));
  set_header_int(file, 0, 12345);
  const std::string message = open_error(file);
  EXPECT_NE(message.find(file + ": header magic is 12345, expected 20240520"), std::string::npos) << message;
  EXPECT_NE(message.find("raw-uint16"), std::string::npos) << "should point to the raw format: " << message;
}

TEST_F(TokenFileTest, TruncatedFileIsRefused) {
  const std::string file = path("x.bin");
  write_token_file(file, ramp(1000));
  fs::resize_file(file, 1024 + 2 * 998);
  EXPECT_EQ(open_error(file),
            file + ": header says 1000 tokens but the file holds 998; the file is truncated — re-run tessera_prepare");
  fs::resize_file(file, 1024 + 2 * 998 + 1);
  EXPECT_NE(open_error(file).find("holds 998 and a half; the file is truncated"), std::string::npos)
      << open_error(file);
}

TEST_F(TokenFileTest, ExtraBytesAreRefused) {
  const std::string file = path("x.bin");
  write_token_file(file, ramp(10));
  fs::resize_file(file, 1024 + 2 * 12);
  const std::string message = open_error(file);
  EXPECT_NE(message.find("header says 10 tokens but the file holds 12; the file has extra bytes"), std::string::npos)
      << message;
}

TEST_F(TokenFileTest, FileShorterThanHeaderIsRefused) {
  const std::string file = path("short.bin");
  write_bytes(file, std::vector<char>(100, 0));
  const std::string message = open_error(file);
  EXPECT_NE(message.find(file + ": file is 100 bytes, shorter than the 1024-byte llm.c header"), std::string::npos)
      << message;
}

TEST_F(TokenFileTest, WrongVersionIsRefused) {
  const std::string file = path("v.bin");
  write_token_file(file, ramp(8));
  set_header_int(file, 1, 2);  // a uint32 file of 8 tokens would be 32 bytes: these are 16
  EXPECT_NE(open_error(file).find("header says 8 tokens but the file holds 4"), std::string::npos) << open_error(file);
  set_header_int(file, 1, 7);
  const std::string message = open_error(file);
  EXPECT_NE(message.find(file + ": header version is 7, expected 1 (uint16 tokens) or 2 (uint32 tokens)"),
            std::string::npos)
      << message;
}

TEST_F(TokenFileTest, NegativeCountIsRefused) {
  const std::string file = path("n.bin");
  write_token_file(file, ramp(8));
  set_header_int(file, 2, -5);
  EXPECT_NE(open_error(file).find("header says -5 tokens (negative)"), std::string::npos) << open_error(file);
}

TEST_F(TokenFileTest, MissingFileNamesPath) {
  const std::string file = path("missing.bin");
  const std::string message = open_error(file);
  EXPECT_NE(message.find(file + ": cannot open token file"), std::string::npos) << message;
}

TEST_F(TokenFileTest, RawUint16RoundTrip) {
  const std::vector<std::int32_t> tokens = {5, 65535, 0, 300, 256};
  const std::string file = path("raw.bin");
  write_token_file(file, tokens, TokenFileFormat::kRawUint16);
  EXPECT_EQ(fs::file_size(file), 10u) << "raw files have no header";
  const TokenFile read = TokenFile::open(file, TokenFileFormat::kRawUint16);
  EXPECT_EQ(read.format(), TokenFileFormat::kRawUint16);
  ASSERT_EQ(read.num_tokens(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(read.token(i), tokens[i]) << "token " << i;
}

TEST_F(TokenFileTest, RawUint16WrittenByOtherTools) {
  // As numpy's uint16 array.tofile() writes it (nanoGPT's prepare.py).
  const std::vector<std::uint16_t> values = {50256, 15496, 11, 995};
  const std::string file = path("train.bin");
  std::vector<char> bytes(values.size() * 2);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  write_bytes(file, bytes);
  const TokenFile read = TokenFile::open(file, TokenFileFormat::kRawUint16);
  ASSERT_EQ(read.num_tokens(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(read.token(i), values[i]) << "token " << i;
  // The format is never guessed: the same file opened as llm.c fails on its size (no header).
  EXPECT_NE(open_error(file).find("shorter than the 1024-byte llm.c header"), std::string::npos) << open_error(file);
}

TEST_F(TokenFileTest, RawFormatErrors) {
  const std::string odd = path("odd.bin");
  write_bytes(odd, std::vector<char>(7, 1));
  EXPECT_NE(
      open_error(odd, TokenFileFormat::kRawUint16).find(odd + ": raw uint16 token file has an odd size (7 bytes)"),
      std::string::npos)
      << open_error(odd, TokenFileFormat::kRawUint16);

  const std::string llmc = path("llmc.bin");
  write_token_file(llmc, ramp(600));
  EXPECT_NE(open_error(llmc, TokenFileFormat::kRawUint16).find("starts with the llm.c header magic"), std::string::npos)
      << open_error(llmc, TokenFileFormat::kRawUint16);

  const std::string empty = path("empty_raw.bin");
  write_bytes(empty, {});
  EXPECT_EQ(TokenFile::open(empty, TokenFileFormat::kRawUint16).num_tokens(), 0);
}

TEST(TokenFileFormatNames, ParseAndName) {
  EXPECT_EQ(parse_token_file_format("llmc"), TokenFileFormat::kLlmc);
  EXPECT_EQ(parse_token_file_format("raw-uint16"), TokenFileFormat::kRawUint16);
  EXPECT_STREQ(token_file_format_name(TokenFileFormat::kRawUint16), "raw-uint16");
  try {
    parse_token_file_format("uint32", "--data-format");
    FAIL() << "uint32 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--data-format: unknown token file format 'uint32'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessera
