// BPE tokenizer files from elsewhere, mutated: vocab.json (all 256 byte tokens, a few merged ones and
// <|endoftext|>) with ids made hostile or of the wrong JSON type and bytes flipped, cut and
// repeated; merges.txt with its bytes mutated. Reading the pair and building the tokenizer, then
// encoding and decoding a sentence, either succeeds or refuses naming the file (or the tokenizer
// built from it); no crash, and no allocation past 64 x the file's size + 1 MiB.
// tessera-test-timeout: 60
// tessera-test-executable: own (it replaces the global operator new: faults/fuzz_support.hpp)
#include <gtest/gtest.h>

#include "tessera/text/tokenizer/bpe_tokenizer.hpp"
#include "tessera/text/tokenizer/bpe_vocabulary.hpp"
#include "tests/faults/fuzz_support.hpp"
#include "tests/faults/small_bpe_vocabulary.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing::fuzz {
namespace {

void read_and_use(const std::filesystem::path& dir) {
  BpeTokenizer tokenizer(read_bpe_vocabulary(dir), "bpe");
  const std::vector<std::int32_t> ids = tokenizer.encode("hello world, hello");
  tokenizer.decode(ids);
}

TEST(FuzzBpeVocabulary, MutatedFilesAreReadOrRefusedNamingTheFile) {
  ScratchDir dir("fuzz_bpe_vocabulary");
  write_bpe_vocabulary(dir.path(), small_bpe_vocabulary());
  const std::string vocab = read_file(dir / kVocabFileName), merges = read_file(dir / kMergesFileName);
  ASSERT_NO_THROW(read_and_use(dir.path()));
  // Errors name a file of the pair (a vocab.json that reads may not fit merges.txt) or, once both
  // read, the tokenizer ("bpe tokenizer").
  const FuzzCounts v = fuzz_reader(
      "vocab.json", dir / kVocabFileName, 0xb0ca, 1000, [&](Rng& rng) { return mutate_json(vocab, rng); },
      [&] { read_and_use(dir.path()); }, {dir.path().string(), "bpe tokenizer"});
  write_file(dir / kVocabFileName, vocab);
  const FuzzCounts m = fuzz_reader(
      "merges.txt", dir / kMergesFileName, 0x3e26e5, 1000, [&](Rng& rng) { return mutate_bytes(merges, rng); },
      [&] { read_and_use(dir.path()); }, {dir.path().string(), "bpe tokenizer"});
  EXPECT_GT(v.refused, 100);
  EXPECT_GT(m.refused, 100);
  EXPECT_GT(v.accepted + m.accepted, 0);
}

}  // namespace
}  // namespace tessera::testing::fuzz
