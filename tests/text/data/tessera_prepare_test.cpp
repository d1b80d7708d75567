// End-to-end tests of the tessera_prepare program on temporary files: the token files it writes
// (training part + validation tail, documents joined by end-of-text), no temporary files left
// behind, and errors that name the bad path. The program is found through TESSERA_BIN_DIR (set by
// ctest to the build's examples directory); the tests skip when it is unset.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "tessera/text/data/default_corpus.hpp"
#include "tessera/text/data/token_file.hpp"
#include "tessera/text/tokenizer/bpe_tokenizer.hpp"
#include "tessera/text/tokenizer/byte_tokenizer.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_reader.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_writer.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class TesseraPrepareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin_dir = std::getenv("TESSERA_BIN_DIR");
    if (bin_dir == nullptr) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (run through ctest)";
    program_ = fs::path(bin_dir) / "tessera_prepare";
    ASSERT_TRUE(fs::exists(program_)) << program_ << " is missing: build the tessera_prepare target";
    std::string tmpl = (fs::temp_directory_path() / "tessera_prepare_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write_text(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
  static std::string slurp(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  RunResult run(const std::string& args) const {
    const std::string out = path("stdout.txt"), err = path("stderr.txt");
    std::string command = "'";
    command.append(program_.string()).append("' ").append(args);
    command.append(" > '").append(out).append("' 2> '").append(err).append("'");
    const int status = std::system(command.c_str());
    RunResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = slurp(out);
    result.err = slurp(err);
    fs::remove(out);
    fs::remove(err);
    return result;
  }
  static std::vector<std::int32_t> tokens_of(const std::string& file) {
    const TokenFile token_file = TokenFile::open(file);
    return {token_file.tokens().begin(), token_file.tokens().end()};
  }

  fs::path program_;
  fs::path dir_;
};

TEST_F(TesseraPrepareTest, WritesTrainingAndValidationFiles) {
  const std::string doc1 = "hello world\n";
  const std::string doc2 = "w\xC3\xB6rld \xE2\x98\x83\n";  // "wörld ☃"
  std::string doc3;
  for (int i = 0; i < 20; ++i) doc3 += "line " + std::to_string(i) + "\n";
  const std::string a = write_text("a.txt", doc1);
  const std::string b = write_text("b.txt", doc2);
  const std::string c = write_text("c.txt", doc3);
  const std::string out = path("out/sub/corpus.bin");  // the directory does not exist yet

  const RunResult result = run("--out '" + out + "' --val-fraction 0.25 '" + a + "' '" + b + "' '" + c + "'");
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find(a), std::string::npos) << "files read are listed: " << result.out;
  const std::size_t bytes = doc1.size() + doc2.size() + doc3.size();
  EXPECT_NE(result.out.find(std::to_string(bytes) + " bytes"), std::string::npos) << result.out;

  const ByteTokenizer tokenizer;
  std::vector<std::int32_t> expected = tokenizer.encode(doc1);
  expected.push_back(ByteTokenizer::kEndOfText);
  tokenizer.encode_append(doc2, expected);
  expected.push_back(ByteTokenizer::kEndOfText);
  tokenizer.encode_append(doc3, expected);
  const auto total = static_cast<std::int64_t>(expected.size());
  const std::int64_t val_count = total / 4;  // floor(total * 0.25)

  const std::vector<std::int32_t> train = tokens_of(out);
  const std::vector<std::int32_t> val = tokens_of(path("out/sub/corpus_val.bin"));
  ASSERT_EQ(static_cast<std::int64_t>(train.size()), total - val_count);
  ASSERT_EQ(static_cast<std::int64_t>(val.size()), val_count);
  EXPECT_NE(result.out.find(std::to_string(total - val_count) + " tokens"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(std::to_string(val_count) + " tokens"), std::string::npos) << result.out;
  std::vector<std::int32_t> joined = train;
  joined.insert(joined.end(), val.begin(), val.end());
  for (std::int64_t i = 0; i < total; ++i) ASSERT_EQ(joined[i], expected[i]) << "token " << i;
  EXPECT_EQ(tokenizer.decode(joined), doc1 + "\n\n" + doc2 + "\n\n" + doc3);

  // Only the two token files are left: the temporary names were renamed away.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(path("out/sub"))) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"corpus.bin", "corpus_val.bin"}));
}

TEST_F(TesseraPrepareTest, ZeroValidationFractionWritesOneFile) {
  const std::string a = write_text("a.txt", "abc");
  const std::string b = write_text("b.txt", "de");
  const RunResult result = run("--out '" + path("t.bin") + "' --val-fraction 0 '" + a + "' '" + b + "'");
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(tokens_of(path("t.bin")), (std::vector<std::int32_t>{'a', 'b', 'c', 256, 'd', 'e'}));
  EXPECT_FALSE(fs::exists(path("t_val.bin")));
}

TEST_F(TesseraPrepareTest, MissingInputFailsNamingIt) {
  const std::string a = write_text("a.txt", "abc");
  const std::string missing = path("missing.txt");
  const RunResult result = run("--out '" + path("t.bin") + "' '" + a + "' '" + missing + "'");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find(missing), std::string::npos) << "stderr: " << result.err;
  EXPECT_FALSE(fs::exists(path("t.bin"))) << "no output after a failed run";
}

TEST_F(TesseraPrepareTest, UnwritableOutputFailsNamingIt) {
  const std::string a = write_text("a.txt", "abc");
  const std::string blocker = write_text("blocker", "a regular file where a directory is needed");
  const RunResult result = run("--out '" + blocker + "/x.bin' '" + a + "'");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find(blocker), std::string::npos) << "stderr: " << result.err;
}

TEST_F(TesseraPrepareTest, BadValidationFractionFails) {
  const std::string a = write_text("a.txt", "abc");
  const RunResult result = run("--out '" + path("t.bin") + "' --val-fraction 1.5 '" + a + "'");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--val-fraction"), std::string::npos) << "stderr: " << result.err;
}

TEST_F(TesseraPrepareTest, HelpExitsZero) {
  const RunResult result = run("--help");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("--val-fraction"), std::string::npos) << result.out;
}

TEST_F(TesseraPrepareTest, DefaultCorpusWhenNoInputs) {
  if (!fs::is_directory(kDefaultCorpusDir)) GTEST_SKIP() << kDefaultCorpusDir << " is absent on this system";
  const std::vector<std::string> files = default_corpus_files();
  std::int64_t bytes = 0;
  std::int64_t documents = 0;
  for (const std::string& file : files) {
    const auto size = static_cast<std::int64_t>(fs::file_size(file));
    bytes += size;
    documents += size > 0;
  }
  const RunResult result = run("--out '" + path("d.bin") + "'");
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const std::int64_t total = bytes + documents - 1;  // one end-of-text between documents
  const std::int64_t val = static_cast<std::int64_t>(static_cast<double>(total) * 0.1);
  EXPECT_EQ(TokenFile::open(path("d.bin")).num_tokens(), total - val);
  EXPECT_EQ(TokenFile::open(path("d_val.bin")).num_tokens(), val);
}

TEST_F(TesseraPrepareTest, ByteFilesRecordTheByteTokenizer) {
  const std::string a = write_text("a.txt", "hello");
  ASSERT_EQ(run("--val-fraction 0 --out '" + path("b.bin") + "' '" + a + "'").exit_code, 0);
  const TokenFile file = TokenFile::open(path("b.bin"));
  ASSERT_TRUE(file.tokenizer().has_value());
  EXPECT_EQ(*file.tokenizer(), bytes_tokenizer_spec());
}

TEST_F(TesseraPrepareTest, BpeVocabLearnsWritesAndRecordsTheTokenizer) {
  const std::string a = write_text("a.txt", "the cat sat on the mat; the cat's hat is flat.\n");
  const std::string b = write_text("b.txt", "caf\xc3\xa9 the cat \xe6\x97\xa5\xe6\x9c\xac the mat\n");
  const RunResult result =
      run("--bpe-vocab 270 --val-fraction 0 --out '" + path("out/c.bin") + "' '" + a + "' '" + b + "'");
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  ASSERT_TRUE(fs::exists(path("out/vocab.json")) && fs::exists(path("out/merges.txt"))) << result.out;
  const TokenFile file = TokenFile::open(path("out/c.bin"));
  ASSERT_TRUE(file.tokenizer().has_value());
  const TokenizerSpec& spec = *file.tokenizer();
  EXPECT_EQ(spec.kind, TokenizerKind::kBpe);
  EXPECT_EQ(spec.dir, path("out"));  // recorded as the token file's own directory
  EXPECT_EQ(spec.files_hash, bpe_files_hash(path("out")));
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(spec);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->vocab_size(), spec.vocab_size);
  // The file is document a, end-of-text, document b.
  std::vector<std::int32_t> expected = tokenizer->encode(slurp(a));
  expected.push_back(tokenizer->end_of_text());
  const std::vector<std::int32_t> second = tokenizer->encode(slurp(b));
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(tokens_of(path("out/c.bin")), expected);
  EXPECT_LT(expected.size(), slurp(a).size() + slurp(b).size());  // merges were learned and used
  EXPECT_EQ(tokenizer->decode(expected), slurp(a) + "<|endoftext|>" + slurp(b));

  // Replacing the files beside the data is caught when the tokenizer is loaded.
  std::ofstream(path("out/merges.txt"), std::ios::app) << "\n";
  EXPECT_THROW(load_tokenizer(spec), std::runtime_error);
}

TEST_F(TesseraPrepareTest, TokenizerDirectoryIsUsedAsGiven) {
  const std::string a = write_text("a.txt", "the cat sat on the mat, the cat sat.\n");
  ASSERT_EQ(run("--bpe-vocab 262 --val-fraction 0 --out '" + path("learned/x.bin") + "' '" + a + "'").exit_code, 0);
  const RunResult result =
      run("--tokenizer '" + path("learned") + "' --val-fraction 0 --out '" + path("y.bin") + "' '" + a + "'");
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(tokens_of(path("y.bin")), tokens_of(path("learned/x.bin")));
  EXPECT_EQ(TokenFile::open(path("y.bin")).tokenizer()->dir, path("learned"));
  const RunResult both = run("--tokenizer '" + path("learned") + "' --bpe-vocab 300 '" + a + "'");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.err.find("give only one of them"), std::string::npos) << both.err;
}

TEST_F(TesseraPrepareTest, TokenizerJsonDirectoryOrFileIsRecordedAsHf) {
  const std::string a = write_text("a.txt", "the cat sat on the mat, the cat sat.\n");
  const std::string b = write_text("b.txt", "a<|endoftext|>b caf\xc3\xa9\n");
  ASSERT_EQ(run("--bpe-vocab 270 --val-fraction 0 --out '" + path("learned/x.bin") + "' '" + a + "'").exit_code, 0);
  fs::create_directories(path("hf"));
  write_hf_tokenizer_files(path("hf"), read_bpe_vocabulary(path("learned")));
  for (const std::string& given : {path("hf"), path("hf/tokenizer.json")}) {
    const RunResult result =
        run("--tokenizer '" + given + "' --val-fraction 0 --out '" + path("y.bin") + "' '" + a + "' '" + b + "'");
    ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
    const TokenFile file = TokenFile::open(path("y.bin"));
    ASSERT_TRUE(file.tokenizer().has_value());
    const TokenizerSpec& spec = *file.tokenizer();
    EXPECT_EQ(spec.kind, TokenizerKind::kHf);
    EXPECT_EQ(spec.dir, given);
    EXPECT_EQ(spec.files_hash, hf_tokenizer_hash(given));
    const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(spec);
    ASSERT_NE(tokenizer, nullptr);
    std::vector<std::int32_t> expected = tokenizer->encode(slurp(a));
    expected.push_back(tokenizer->end_of_text());
    const std::vector<std::int32_t> second = tokenizer->encode(slurp(b));
    expected.insert(expected.end(), second.begin(), second.end());
    EXPECT_EQ(tokens_of(path("y.bin")), expected);
    EXPECT_EQ(second[1], tokenizer->end_of_text()) << "<|endoftext|> written in b.txt is the added token";
    EXPECT_NE(result.out.find("tokenizer: hf, " + std::to_string(spec.vocab_size) + " tokens, " + given),
              std::string::npos)
        << result.out;
  }
  write_text("hf/tokenizer.json", "{\"model\": {\"type\": \"WordPiece\"}, \"pre_tokenizer\": null}");
  const RunResult refused = run("--tokenizer '" + path("hf") + "' --out '" + path("z.bin") + "' '" + a + "'");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find(path("hf/tokenizer.json") + ": pre_tokenizer is null"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace tessera
