// The tokenizer record of token files: written in header ints llm.c leaves zero (so the llm.c
// header is unchanged), read back with a relative directory resolved against the file's; files
// without one (llm.c shards, older files) have none; --data-format picks the tokenizer of the ids
// (detect, tessera, llmc, nanogpt); a dataset refuses files tokenized differently; a record whose
// vocabulary its tokenizer cannot have (2^31-1 for the byte tokenizer) is refused, naming the file
// and the field.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tessera/text/data/data_format.hpp"
#include "tessera/text/data/token_dataset.hpp"
#include "tessera/text/data/token_file.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class TokenizerRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tessera_tokenizer_record_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "sub");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static std::array<std::int32_t, kTokenFileHeaderInts> header_of(const std::string& file) {
    std::array<std::int32_t, kTokenFileHeaderInts> header{};
    std::ifstream in(file, std::ios::binary);
    in.read(reinterpret_cast<char*>(header.data()), kTokenFileHeaderBytes);
    return header;
  }

  fs::path dir_;
  const std::vector<std::int32_t> tokens_{1, 2, 3, 500, 4};
};

TEST_F(TokenizerRecordTest, RecordRoundTripsAndKeepsTheLlmcHeader) {
  const TokenizerSpec spec{TokenizerKind::kBpe, "../vocab", 512, 0x0123456789abcdefULL};
  write_token_file(path("sub/a.bin"), tokens_, TokenFileFormat::kLlmc, spec);
  const auto header = header_of(path("sub/a.bin"));
  EXPECT_EQ(header[0], kTokenFileMagic);
  EXPECT_EQ(header[1], kTokenFileVersion);
  EXPECT_EQ(header[2], 5);
  EXPECT_EQ(header[3], kTokenizerRecordMark);
  EXPECT_EQ(header[5], 2);    // bpe
  EXPECT_EQ(header[6], 512);  // vocabulary
  EXPECT_EQ(static_cast<std::uint32_t>(header[7]), 0x89abcdefu);
  EXPECT_EQ(static_cast<std::uint32_t>(header[8]), 0x01234567u);
  EXPECT_EQ(header[9], 8);
  EXPECT_EQ(std::memcmp(&header[kTokenizerRecordDirInt], "../vocab", 8), 0);

  const TokenFile file = TokenFile::open(path("sub/a.bin"));
  EXPECT_EQ(std::vector<std::int32_t>(file.tokens().begin(), file.tokens().end()), tokens_);
  ASSERT_TRUE(file.tokenizer().has_value());
  EXPECT_EQ(file.tokenizer()->kind, TokenizerKind::kBpe);
  EXPECT_EQ(file.tokenizer()->vocab_size, 512);
  EXPECT_EQ(file.tokenizer()->files_hash, 0x0123456789abcdefULL);
  EXPECT_EQ(file.tokenizer()->dir, path("vocab"));  // relative to sub/
}

TEST_F(TokenizerRecordTest, AHuggingFaceTokenizerRecordRoundTrips) {
  const TokenizerSpec spec{TokenizerKind::kHf, "../tok/tokenizer.json", 600, 0x0123456789abcdefULL};
  write_token_file(path("sub/hf.bin"), tokens_, TokenFileFormat::kLlmc, spec);
  EXPECT_EQ(header_of(path("sub/hf.bin"))[5], 4);  // hf
  const TokenFile file = TokenFile::open(path("sub/hf.bin"));
  ASSERT_TRUE(file.tokenizer().has_value());
  EXPECT_EQ(file.tokenizer()->kind, TokenizerKind::kHf);
  EXPECT_EQ(file.tokenizer()->vocab_size, 600);
  EXPECT_EQ(file.tokenizer()->files_hash, 0x0123456789abcdefULL);
  EXPECT_EQ(file.tokenizer()->dir, path("tok/tokenizer.json"));  // relative to sub/
}

TEST_F(TokenizerRecordTest, FilesWithoutARecordHaveNone) {
  write_token_file(path("old.bin"), tokens_);  // as llm.c and older tessera_prepare write them
  const auto header = header_of(path("old.bin"));
  for (int i = 3; i < kTokenFileHeaderInts; ++i) ASSERT_EQ(header[i], 0) << "header int " << i;
  EXPECT_FALSE(TokenFile::open(path("old.bin")).tokenizer().has_value());
  EXPECT_THROW(write_token_file(path("raw.bin"), tokens_, TokenFileFormat::kRawUint16, bytes_tokenizer_spec()),
               std::invalid_argument);
  EXPECT_THROW(write_token_file(path("long.bin"), tokens_, TokenFileFormat::kLlmc,
                                TokenizerSpec{TokenizerKind::kBpe, std::string(961, 'x'), 300, 0}),
               std::invalid_argument);
}

TEST_F(TokenizerRecordTest, DataFormatPicksTheTokenizer) {
  write_token_file(path("bytes.bin"), tokens_, TokenFileFormat::kLlmc, bytes_tokenizer_spec());
  write_token_file(path("llmc.bin"), tokens_);
  write_token_file(path("nano.bin"), tokens_, TokenFileFormat::kRawUint16);
  const auto tokenizer_of = [&](const std::string& name, DataFormat format) {
    return data_tokenizer(open_token_dataset({path(name)}, format), format);
  };
  EXPECT_EQ(tokenizer_of("bytes.bin", DataFormat::kDetect), bytes_tokenizer_spec());
  EXPECT_EQ(tokenizer_of("bytes.bin", DataFormat::kTessera), bytes_tokenizer_spec());
  EXPECT_EQ(tokenizer_of("llmc.bin", DataFormat::kDetect), gpt2_tokenizer_spec());
  EXPECT_EQ(tokenizer_of("llmc.bin", DataFormat::kLlmc), gpt2_tokenizer_spec());
  EXPECT_EQ(tokenizer_of("nano.bin", DataFormat::kNanoGpt), gpt2_tokenizer_spec());
  EXPECT_EQ(gpt2_tokenizer_spec().vocab_size, 50257);
  try {
    tokenizer_of("llmc.bin", DataFormat::kTessera);
    FAIL() << "a file without a record read as tessera";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("has no tokenizer record"), std::string::npos) << e.what();
  }
  EXPECT_THROW(open_token_dataset({path("nano.bin")}, DataFormat::kDetect), std::runtime_error);  // no header
  EXPECT_EQ(parse_data_format("nanogpt", "--data-format"), DataFormat::kNanoGpt);
  EXPECT_THROW(parse_data_format("hf", "--data-format"), std::invalid_argument);
}

TEST_F(TokenizerRecordTest, DatasetRefusesFilesOfDifferentTokenizers) {
  write_token_file(path("a.bin"), tokens_, TokenFileFormat::kLlmc, bytes_tokenizer_spec());
  write_token_file(path("b.bin"), tokens_, TokenFileFormat::kLlmc, bytes_tokenizer_spec());
  write_token_file(path("c.bin"), tokens_);
  EXPECT_EQ(TokenDataset(std::vector<std::string>{path("a.bin"), path("b.bin")}).num_tokens(), 10);
  try {
    TokenDataset(std::vector<std::string>{path("a.bin"), path("c.bin")});
    FAIL() << "files of two tokenizers made one dataset";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another tokenizer"), std::string::npos) << e.what();
  }
}

TEST_F(TokenizerRecordTest, AVocabularyTheTokenizerCannotHaveIsRefused) {
  const std::vector<std::int32_t> tokens = {1, 2, 3};
  const std::pair<TokenizerSpec, std::string> cases[] = {
      {{TokenizerKind::kBytes, "", 2147483647, 0}, "is 2147483647 but the bytes tokenizer it names has 257 tokens"},
      {{TokenizerKind::kGpt2, "", 50000, 0}, "is 50000 but the gpt2 tokenizer it names has 50257 tokens"},
      {{TokenizerKind::kBpe, "", 70000, 0}, "is 70000, outside 1..65536"},
      {{TokenizerKind::kBpe, "", 0, 0}, "is 0, outside 1..65536"},
      {{TokenizerKind::kBpe, "", -5, 0}, "is -5, outside 1..65536"}};
  for (const auto& [spec, problem] : cases) {
    const std::string file = path("bad_vocab.bin");
    write_token_file(file, tokens, TokenFileFormat::kLlmc, spec);
    try {
      TokenFile::open(file);
      ADD_FAILURE() << spec.describe() << ": accepted";
    } catch (const std::runtime_error& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find(file + ": header[6] (the tokenizer record's vocabulary) " + problem), std::string::npos)
          << text;
    }
  }
  write_token_file(path("ok.bin"), tokens, TokenFileFormat::kLlmc, TokenizerSpec{TokenizerKind::kBpe, "", 65536, 0});
  EXPECT_EQ(TokenFile::open(path("ok.bin")).tokenizer()->vocab_size, 65536);
}

}  // namespace
}  // namespace tessera
