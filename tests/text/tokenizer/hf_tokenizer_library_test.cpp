// Tessera's tokenizer.json reading and writing against the Hugging Face libraries themselves, from a
// virtual environment under the build directory (`pip install tokenizers transformers`, no torch, the
// wheels of tests/support/venv_locks/hf_tokenizers.txt where they serve; made once and kept, at
// TESSERA_HF_TOKENIZERS_VENV, which ctest sets):
//   - the `tokenizers` library trains two small byte-level BPEs on a generated corpus: one with
//     GPT-2's ByteLevel pre-tokenizer (and an added token), one with Llama 3's Split + ByteLevel and
//     ignore_merges (and its special tokens after the vocabulary); each gets one vocabulary token no
//     merge makes. It encodes varied texts (unicode, digits, whitespace runs, newlines, contractions
//     in both cases, added tokens written in the text); Tessera, reading the saved tokenizer.json,
//     must cut the same pieces and give the same ids, and tessera_prepare --tokenizer FILE the same
//     ids joined by the end-of-text id;
//   - Tessera learns a BPE (BpeTrainer) on the same corpus and writes tokenizer.json and
//     tokenizer_config.json; transformers.AutoTokenizer.from_pretrained(dir) must encode the texts
//     as BpeTokenizer does (and decode them back), and name <|endoftext|> as its eos token.
// Without python3-venv or PyPI the test skips and says which.
// tessera-test-timeout: 600
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/text/data/token_file.hpp"
#include "tessera/text/tokenizer/bpe_tokenizer.hpp"
#include "tessera/text/tokenizer/bpe_trainer.hpp"
#include "tessera/text/tokenizer/byte_unicode.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_reader.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_writer.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"
#include "tests/support/python_venv.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Ids = std::vector<std::int32_t>;
using testing::run_bounded;

// The venv's python with tokenizers and transformers installed, made on first use; "" with the
// reason in `why`.
std::string hf_python(std::string* why) {
  return testing::venv_python({"TESSERA_HF_TOKENIZERS_VENV", "import tokenizers, transformers",
                               "tokenizers transformers", 480, "tests/support/venv_locks/hf_tokenizers.txt"},
                              why);
}

// Trains the two tokenizers with the `tokenizers` library, saves them to argv[1]/{gpt2,llama3}.json
// and prints {"samples", "corpus", "gpt2": {"file", "ids", "pieces", "end_of_text"}, "llama3": ...}
// (ids of encode(sample, add_special_tokens=False), pieces of the pre-tokenizer alone, as token
// text); also writes argv[1]/samples.json.
const char* kLibraryTokenizers = R"PY(
import json, random, sys
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

out = sys.argv[1]
LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
rng = random.Random(5)
words = ("the of and to in is was that for it with as his on be at by this had not are but from or have an they "
         "which one you were her all she there would their we him been has when who will more no if out so said what "
         "up its about into than them can only other new some could time these two may then do first any my now").split()
extra = ["don't", "it's", "We're", "THEY'VE", "I'm", "you'll", "he'd", "café", "naïve", "Straße", "日本語", "русский",
         "1999", "2024", "42", "3.14", "—", "...", "!", "?", ",", ";", "\n", "\n\n", "  ", "\t", "(x)", "🙂"]
corpus = []
for _ in range(400):
    corpus.append(" ".join(rng.choice(words) if rng.random() < 0.8 else rng.choice(extra)
                           for _ in range(rng.randint(5, 25))))
samples = [
    "Hello world! It's a test, isn't it? We'll see; they've said I'd go, you're right, I'm here.",
    "SHOUTING: IT'S DONE, WE'RE OK, I'M FINE, THEY'LL COME, HE'D GO 'Ş 'ſ x'ſt",
    "Numbers: 1 12 123 1234 12345 3.14159 1,000,000 ٣٤٥٦ ⅻ ²³ 2024-01-01",
    "Unicode: café naïve Straße Ελληνικά русский 日本語のテキスト 한국어 emoji 🙂🚀 ‽ \u00a0nbsp\u2003em\u3000ideo",
    "whitespace   runs\t\ttabs \n\n\nnewlines  \r\n crlf   \n  trailing   ",
    "symbols!!\n\n(paren) [brackets] {braces} <angle> --dash-- ...ellipsis...\n@#$%^&*\n",
    "special <|endoftext|> token<|endoftext|>inside and <|begin_of_text|>begin <|end_of_text|>end <sep> x<sep>y",
    " zyxwv zyxwv! x zyxwv\nzyxwv",
    "", "   leading spaces", "\n", " ", "a", "'s", "\u2028line\u2029sep\x1c\x1f",
    "\n".join(corpus[:60]),
]

def extra_vocab(tok, token):
    # A token no merge makes: with ignore_merges a piece that is this token is taken whole.
    j = json.loads(tok.to_str())
    j["model"]["vocab"][token] = len(j["model"]["vocab"])
    return Tokenizer.from_str(json.dumps(j))

def trained(model, pre, specials):
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=600, min_frequency=2, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return extra_vocab(tok, "Ġzyxwv")

gpt2 = trained(models.BPE(), pre_tokenizers.ByteLevel(add_prefix_space=False), ["<|endoftext|>"])
gpt2.add_tokens(["<sep>"])
llama3 = trained(models.BPE(ignore_merges=True),
                 pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
                                          pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), [])
llama3.add_special_tokens([AddedToken("<|begin_of_text|>", normalized=False, special=True),
                           AddedToken("<|end_of_text|>", normalized=False, special=True)])
result = {"samples": samples, "corpus": "\n".join(corpus)}
for name, tok in (("gpt2", gpt2), ("llama3", llama3)):
    tok.save(f"{out}/{name}.json")
    result[name] = {"file": f"{out}/{name}.json",
                    "ids": [tok.encode(s, add_special_tokens=False).ids for s in samples],
                    "pieces": [[p for p, _ in tok.pre_tokenizer.pre_tokenize_str(s)] for s in samples],
                    "end_of_text": tok.token_to_id("<|endoftext|>" if name == "gpt2" else "<|end_of_text|>")}
with open(f"{out}/samples.json", "w") as f:
    json.dump(samples, f)
print(json.dumps(result))
)PY";

// Prints {"class", "eos", "ids": [...], "decoded": [...]} of AutoTokenizer.from_pretrained(argv[1])
// over the samples in argv[2].
const char* kAutoTokenizer = R"PY(
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
samples = json.load(open(sys.argv[2]))
ids = [tok.encode(s) for s in samples]
print(json.dumps({"class": type(tok).__name__, "eos": tok.eos_token_id, "ids": ids,
                  "decoded": [tok.decode(i) for i in ids]}))
)PY";

// The JSON object a script printed (its last line starting with '{').
Json printed_json(const std::string& output) {
  const std::size_t at = output.rfind("\n{");
  return Json::parse(output.substr(at == std::string::npos ? output.find('{') : at + 1));
}

// A sample's first characters, for messages.
std::string shown(const std::string& text) { return Json(text.substr(0, 120)).dump(); }

// The venv and the library's tokenizers are made once for the four tests (they only read them and
// write files of their own names beside them).
class HfTokenizerLibraryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = std::make_unique<testing::ScratchDir>("hf_tokenizer_library");
    python_ = hf_python(&skip_reason_);
    if (python_.empty()) return;
    write(kLibraryTokenizersFile, kLibraryTokenizers);
    const auto ran = run_bounded(
        python_ + " " + path(kLibraryTokenizersFile) + " " + scratch_->path().string() + " 2>" + path("library.err"),
        180);
    if (ran.exit_code != 0) {
      setup_failure_ = ran.output + slurp(path("library.err"));
      return;
    }
    library_ = printed_json(ran.output);
    for (const Json& s : library_.at("samples")) samples_.push_back(s.get<std::string>());
  }
  static void TearDownTestSuite() { scratch_.reset(); }
  void SetUp() override {
    if (python_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(setup_failure_.empty()) << setup_failure_;
  }
  static std::string path(const std::string& name) { return (*scratch_ / name).string(); }
  static void write(const std::string& name, const std::string& text) {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  static std::string slurp(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  // Tessera's ids for every sample against the library's, for the tokenizer.json named `name`.
  void expect_library_ids(const std::string& name) const {
    const Json& library = library_.at(name);
    const TokenizerSpec spec = bpe_tokenizer_spec(library.at("file").get<std::string>(), TokenizerKind::kBpe);
    EXPECT_EQ(spec.kind, TokenizerKind::kHf);
    const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(spec);
    ASSERT_NE(tokenizer, nullptr);
    EXPECT_EQ(tokenizer->end_of_text(), library.at("end_of_text").get<std::int32_t>());
    const auto* bpe = dynamic_cast<const BpeTokenizer*>(tokenizer.get());
    ASSERT_NE(bpe, nullptr);
    for (std::size_t k = 0; k < samples_.size(); ++k) {
      std::vector<std::string> pieces;  // the pre-tokenizer's alone, before any merge
      for (const std::string_view p : pretokenize(bpe->encoding().pretokenizer, samples_[k])) {
        pieces.push_back(bytes_to_token_text(p));
      }
      EXPECT_EQ(pieces, library.at("pieces").at(k).get<std::vector<std::string>>())
          << name << ", sample " << k << ": " << shown(samples_[k]);
      const Ids ids = tokenizer->encode(samples_[k]);
      EXPECT_EQ(ids, library.at("ids").at(k).get<Ids>()) << name << ", sample " << k << ": " << shown(samples_[k]);
      EXPECT_EQ(tokenizer->decode(ids), samples_[k]) << name << ", sample " << k;
    }
  }

  static constexpr const char* kLibraryTokenizersFile = "library_tokenizers.py";
  static inline std::unique_ptr<testing::ScratchDir> scratch_;
  static inline std::string python_, skip_reason_, setup_failure_;
  static inline Json library_;
  static inline std::vector<std::string> samples_;
};

TEST_F(HfTokenizerLibraryTest, GptTwoStyleTokenizerJsonEncodesAsTheLibrary) { expect_library_ids("gpt2"); }

TEST_F(HfTokenizerLibraryTest, LlamaThreeStyleTokenizerJsonEncodesAsTheLibrary) { expect_library_ids("llama3"); }

TEST_F(HfTokenizerLibraryTest, TesseraPrepareJoinsTheLibrarysIdsWithEndOfText) {
  const char* bin = std::getenv("TESSERA_BIN_DIR");
  if (bin == nullptr) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (run through ctest)";
  const Json& library = library_.at("gpt2");
  write("a.txt", samples_[0]);
  write("b.txt", samples_[3]);
  const std::string file = library.at("file").get<std::string>();
  const auto ran = run_bounded(std::string(bin) + "/tessera_prepare --tokenizer " + file + " --val-fraction 0 --out " +
                                   path("data/c.bin") + " " + path("a.txt") + " " + path("b.txt"),
                               60);
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  Ids expected = library.at("ids").at(0).get<Ids>();
  expected.push_back(library.at("end_of_text").get<std::int32_t>());
  const Ids second = library.at("ids").at(3).get<Ids>();
  expected.insert(expected.end(), second.begin(), second.end());
  const TokenFile tokens = TokenFile::open(path("data/c.bin"));
  EXPECT_EQ(Ids(tokens.tokens().begin(), tokens.tokens().end()), expected);
  ASSERT_TRUE(tokens.tokenizer().has_value());
  EXPECT_EQ(tokens.tokenizer()->kind, TokenizerKind::kHf);
  EXPECT_EQ(tokens.tokenizer()->dir, file);
  EXPECT_EQ(tokens.tokenizer()->files_hash, hf_tokenizer_hash(file));
}

TEST_F(HfTokenizerLibraryTest, AutoTokenizerLoadsWhatTesseraWritesAndEncodesTheSame) {
  BpeTrainer trainer;
  trainer.add_text(library_.at("corpus").get<std::string>());
  const BpeVocabulary vocabulary = trainer.train(600);
  const fs::path dir = *scratch_ / "export";
  fs::create_directories(dir);
  write_hf_tokenizer_files(dir, vocabulary);
  write("auto_tokenizer.py", kAutoTokenizer);
  const auto ran = run_bounded(python_ + " " + path("auto_tokenizer.py") + " " + dir.string() + " " +
                                   path("samples.json") + " 2>" + path("auto.err"),
                               180);
  ASSERT_EQ(ran.exit_code, 0) << ran.output << slurp(path("auto.err"));
  const Json hf = printed_json(ran.output);

  const BpeTokenizer tessera(vocabulary, "bpe");  // vocab.json's way: <|endoftext|> in a text is text
  HfTokenizer read_back = read_hf_tokenizer(dir);
  const BpeTokenizer tessera_json(std::move(read_back.vocabulary), "hf", std::move(read_back.encoding));
  EXPECT_EQ(hf.at("eos").get<std::int32_t>(), tessera.end_of_text()) << hf.at("class");
  for (std::size_t k = 0; k < samples_.size(); ++k) {
    const Ids ids = hf.at("ids").at(k).get<Ids>();
    EXPECT_EQ(ids, tessera_json.encode(samples_[k])) << "sample " << k << ": " << shown(samples_[k]);
    if (samples_[k].find("<|endoftext|>") == std::string::npos) {
      EXPECT_EQ(ids, tessera.encode(samples_[k])) << "sample " << k << ": " << shown(samples_[k]);
    }
    EXPECT_EQ(hf.at("decoded").at(k).get<std::string>(), samples_[k]) << "sample " << k;
  }
}

}  // namespace
}  // namespace tessera
