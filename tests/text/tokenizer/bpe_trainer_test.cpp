// BpeTrainer: merges worked out by hand on a tiny text (most frequent pair first, ties by ids,
// stopping when no pair occurs twice); training twice gives identical files; train -> write ->
// read -> encode -> decode round-trips arbitrary UTF-8, invalid sequences included.
#include "tessera/text/tokenizer/bpe_trainer.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/text/tokenizer/bpe_tokenizer.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

const char* const kSpace = "\xc4\xa0";  // Ġ, the token text of ' '

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> sample_documents() {
  return {"The quick brown fox jumps over the lazy dog. The dog sleeps; the fox doesn't.\n",
          "Caf\xc3\xa9 cr\xc3\xa8me br\xc3\xbbl\xc3\xa9"
          "e, na\xc3\xafve r\xc3\xa9sum\xc3\xa9 \xe2\x80\x94 "
          "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e 1234 1234 "
          "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\n",
          "    indented code();\n\tint x = 42;\n    return x;\n"};
}

TEST(BpeTrainer, MergesTheMostFrequentPairFirst) {
  // Pieces: "ab" x1, " ab" x2, " cd" x1. Pairs: (a,b) 3, (Ġ,a) 2, (Ġ,c) 1, (c,d) 1 -> "a b" first;
  // then (Ġ,ab) 2 -> "Ġ ab"; every other pair occurs once: training stops at 256 + 2 + 1 tokens.
  BpeTrainer trainer;
  trainer.add_text("ab ab ab cd");
  const BpeVocabulary v = trainer.train(300);
  ASSERT_EQ(v.merges.size(), 2u);
  EXPECT_EQ(v.merges[0], (std::pair<std::string, std::string>{"a", "b"}));
  EXPECT_EQ(v.merges[1], (std::pair<std::string, std::string>{kSpace, "ab"}));
  ASSERT_EQ(v.size(), 259);
  EXPECT_EQ(v.tokens[256], "ab");
  EXPECT_EQ(v.tokens[257], std::string(kSpace) + "ab");
  EXPECT_EQ(v.tokens[258], "<|endoftext|>");
  EXPECT_EQ(v.tokens['a'], "a");
  EXPECT_EQ(v.tokens[' '], kSpace);
}

TEST(BpeTrainer, TiesGoToTheSmallerPairOfIds) {
  // "xy" and "yz" occur twice each: (x,y) = (120,121) < (y,z) = (121,122) merges first; after it
  // "yz" no longer occurs (y is inside xy), so "xy z" (twice) merges next.
  BpeTrainer trainer;
  trainer.add_text("xyz xyz");
  const BpeVocabulary v = trainer.train(300);
  ASSERT_GE(v.merges.size(), 2u);
  EXPECT_EQ(v.merges[0], (std::pair<std::string, std::string>{"x", "y"}));
  EXPECT_EQ(v.merges[1], (std::pair<std::string, std::string>{"xy", "z"}));
}

TEST(BpeTrainer, StopsAtTheVocabularySize) {
  BpeTrainer trainer;
  for (const std::string& d : sample_documents()) trainer.add_text(d);
  const BpeVocabulary v = trainer.train(270);
  EXPECT_EQ(v.size(), 270);
  EXPECT_EQ(v.merges.size(), 13u);
  EXPECT_THROW(trainer.train(256), std::invalid_argument);
}

class BpeTrainerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    for (fs::path* dir : {&a_, &b_}) {
      std::string tmpl = (fs::temp_directory_path() / "bpe_trainer_XXXXXX").string();
      ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
      *dir = tmpl;
    }
  }
  void TearDown() override {
    for (const fs::path& dir : {a_, b_}) {
      if (!dir.empty()) fs::remove_all(dir);
    }
  }
  fs::path a_, b_;
};

TEST_F(BpeTrainerFiles, TrainingIsDeterministic) {
  for (const fs::path& dir : {a_, b_}) {
    BpeTrainer trainer;
    for (const std::string& d : sample_documents()) trainer.add_text(d);
    write_bpe_vocabulary(dir, trainer.train(320));
  }
  EXPECT_EQ(slurp(a_ / "vocab.json"), slurp(b_ / "vocab.json"));
  EXPECT_EQ(slurp(a_ / "merges.txt"), slurp(b_ / "merges.txt"));
  EXPECT_EQ(bpe_files_hash(a_), bpe_files_hash(b_));
}

TEST_F(BpeTrainerFiles, TrainEncodeDecodeRoundTripsArbitraryUtf8) {
  BpeTrainer trainer;
  for (const std::string& d : sample_documents()) trainer.add_text(d);
  const BpeVocabulary trained = trainer.train(320);
  write_bpe_vocabulary(a_, trained);
  const BpeTokenizer fresh(trained, "bpe");
  const BpeTokenizer loaded(read_bpe_vocabulary(a_), "bpe");
  ASSERT_EQ(loaded.vocab_size(), trained.size());

  std::vector<std::string> texts = sample_documents();
  texts.push_back("");
  texts.push_back("\xff\xfe\xc3 broken \xe6\x97 sequences \xed\xa0\x80 (a surrogate) \xc0\xaf (overlong)");
  texts.push_back("The fox's caf\xc3\xa9 costs 1234\xe2\x82\xac \xf0\x9f\x98\x80   \n");
  Rng rng(7);
  for (int trial = 0; trial < 50; ++trial) {  // random bytes, and random code points as UTF-8
    std::string bytes(static_cast<std::size_t>(rng.below(80)), '\0');
    for (char& c : bytes) c = static_cast<char>(rng.below(256));
    texts.push_back(bytes);
  }
  for (const std::string& text : texts) {
    const std::vector<std::int32_t> ids = loaded.encode(text);
    EXPECT_EQ(ids, fresh.encode(text));
    for (const std::int32_t id : ids) ASSERT_TRUE(id >= 0 && id < loaded.vocab_size());
    EXPECT_EQ(loaded.decode(ids), text);
  }
  // Merges pay off on the training text: fewer tokens than bytes.
  const std::string first = sample_documents().front();
  EXPECT_LT(loaded.encode(first).size(), first.size() * 3 / 4);
}

}  // namespace
}  // namespace tessera
