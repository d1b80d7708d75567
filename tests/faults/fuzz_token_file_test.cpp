// Token files from elsewhere, mutated: an llm.c file with Tessera's tokenizer record, its header
// ints set to hostile values (negative, 2^31-1, counts that disagree with the size, vocabularies its
// tokenizer cannot have), its bytes flipped, cut and repeated; and a raw uint16 file, cut and grown.
// Opening either succeeds — then the count matches the file's size, every token reads, and a record's
// vocabulary is one its tokenizer can have — or refuses naming the file; no crash, and no
// allocation past 64 x the file's size + 1 MiB.
// tessera-test-timeout: 60
// tessera-test-executable: own (it replaces the global operator new: faults/fuzz_support.hpp)
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "tessera/text/data/token_file.hpp"
#include "tests/faults/fuzz_support.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing::fuzz {
namespace {

constexpr std::int32_t kHostileInts[] = {-1,
                                         0,
                                         1,
                                         2,
                                         3,
                                         256,
                                         257,
                                         50257,
                                         65535,
                                         65536,
                                         65537,
                                         959,
                                         960,
                                         961,
                                         std::numeric_limits<std::int32_t>::max(),
                                         std::numeric_limits<std::int32_t>::min(),
                                         20240520,
                                         0x41525354};

// One of the first 10 header ints (magic, version, count, the record) set to a hostile value.
Mutated mutate_header_int(const std::string& file, Rng& rng) {
  std::string s = file;
  const std::size_t i = rng.below(10);
  const std::int32_t v = kHostileInts[rng.below(std::size(kHostileInts))];
  std::memcpy(s.data() + 4 * i, &v, 4);
  return {s, "header[" + std::to_string(i) + "] = " + std::to_string(v)};
}

// What an opened file must satisfy.
void check_opened(const TokenFile& file, std::int64_t file_bytes, std::int64_t header_bytes) {
  if (file.num_tokens() * file.token_bytes() + header_bytes != file_bytes) {
    throw AcceptedBadFile("it has " + std::to_string(file.num_tokens()) + " tokens in " + std::to_string(file_bytes) +
                          " bytes");
  }
  std::int64_t sum = 0;
  for (std::int64_t i = 0; i < file.num_tokens(); ++i) sum += file.token(i);
  [[maybe_unused]] volatile std::int64_t touched = sum;  // every token read, through the mapping
  if (file.tokenizer()) {
    const std::int32_t vocab = file.tokenizer()->vocab_size;
    if (vocab < 1 || (file.token_bytes() == 2 && vocab > kMaxTokenId + 1)) {
      throw AcceptedBadFile("its tokenizer record has " + std::to_string(vocab) + " tokens");
    }
  }
}

TEST(FuzzTokenFile, MutatedLlmcFilesOpenConsistentlyOrAreRefusedNamingTheFile) {
  ScratchDir dir("fuzz_token_file");
  const std::string path = (dir / "train.bin").string();
  std::vector<std::int32_t> tokens(100);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i * 3 % 300);
  write_token_file(path, tokens, TokenFileFormat::kLlmc, TokenizerSpec{TokenizerKind::kBpe, "tok", 300, 0x1234});
  const std::string valid = read_file(path);
  const FuzzCounts counts = fuzz_reader(
      "llmc token file", path, 0x70ce4f11e, 3000,
      [&](Rng& rng) { return rng.below(2) == 0 ? mutate_header_int(valid, rng) : mutate_bytes(valid, rng); },
      [&] {
        const TokenFile file = TokenFile::open(path, TokenFileFormat::kLlmc);
        check_opened(file, static_cast<std::int64_t>(std::filesystem::file_size(path)), kTokenFileHeaderBytes);
      },
      {path});
  EXPECT_GT(counts.accepted, 0);
  EXPECT_GT(counts.refused, 900);
}

TEST(FuzzTokenFile, MutatedRawFilesOpenConsistentlyOrAreRefusedNamingTheFile) {
  ScratchDir dir("fuzz_token_file");
  const std::string path = (dir / "train.raw").string();
  std::vector<std::int32_t> tokens(200);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i * 7 % 50257);
  write_token_file(path, tokens, TokenFileFormat::kRawUint16);
  const std::string valid = read_file(path);
  const FuzzCounts counts = fuzz_reader(
      "raw token file", path, 0x7a3, 1000, [&](Rng& rng) { return mutate_bytes(valid, rng); },
      [&] {
        const TokenFile file = TokenFile::open(path, TokenFileFormat::kRawUint16);
        check_opened(file, static_cast<std::int64_t>(std::filesystem::file_size(path)), 0);
      },
      {path});
  EXPECT_GT(counts.accepted, 0);
}

}  // namespace
}  // namespace tessera::testing::fuzz
