// read_hf_tokenizer against tokenizer.json files written here by hand: model.vocab holds the 256
// bytes (id = byte value, token text from the bytes_to_unicode table), the merges below and one
// token no merge makes; added_tokens follow. The expected ids are worked out by hand from the merge
// ranks. Then every refusal, each naming the file, the field and its value; and the tokenizer
// spec of a directory or file holding tokenizer.json (kind hf, its hash covering the file).
#include "tessera/text/tokenizer/hf_tokenizer_reader.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/text/tokenizer/byte_unicode.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Ids = std::vector<std::int32_t>;
using Json = nlohmann::json;

// rank: merge      -> id
//   0: "Ġ t"       -> 256 "Ġt"
//   1: "h e"       -> 257 "he"
//   2: "Ġt he"     -> 258 "Ġthe"
//   3: "1 2"       -> 259 "12"
//   4: "12 3"      -> 260 "123"
//   5: "' s"       -> 261 "'s"
// 262 "Ġcat" (no merge makes it), then added_tokens 263 "<|endoftext|>", 264 "<|begin_of_text|>"
const std::vector<std::pair<std::string, std::string>> kReaderMerges = {{"\xc4\xa0", "t"}, {"h", "e"},  {"\xc4\xa0t", "he"},
                                                                  {"1", "2"},        {"12", "3"}, {"'", "s"}};
const std::string kSpaceCat = std::string("\xc4\xa0") + "cat";  // " cat" as token text
const std::string kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

Json added(std::int32_t id, const std::string& content, bool normalized) {
  return {{"id", id},        {"content", content},       {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", normalized}, {"special", true}};
}

// GPT-2's form: a ByteLevel pre-tokenizer with its regex, merges as "a b" strings.
Json gpt2_style() {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[bytes_to_token_text(std::string(1, static_cast<char>(b)))] = b;
  Json merges = Json::array();
  for (const auto& [left, right] : kReaderMerges) {
    vocab[left + right] = 256 + merges.size();
    merges.push_back(left + " " + right);
  }
  vocab[kSpaceCat] = 262;
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", {added(263, "<|endoftext|>", true), added(264, "<|begin_of_text|>", false)}},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level(true)},
          {"post_processor", byte_level(false)},
          {"decoder", byte_level(true)},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", merges}}}};
}

// Llama 3's form: Split with its pattern then ByteLevel without regex, ignore_merges, merges as
// pairs, "<|end_of_text|>" as end-of-text, a template post-processor.
Json llama3_style() {
  Json json = gpt2_style();
  json["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
        byte_level(false)}}};
  json["post_processor"] = {{"type", "TemplateProcessing"}};
  json["model"]["ignore_merges"] = true;
  Json pairs = Json::array();
  for (const auto& [left, right] : kReaderMerges) pairs.push_back({left, right});
  json["model"]["merges"] = pairs;
  json["added_tokens"] = {added(263, "<|begin_of_text|>", false), added(264, "<|end_of_text|>", false)};
  return json;
}

class HfTokenizerReaderTest : public ::testing::Test {
 protected:
  // Writes `json` as dir/tokenizer.json; returns the directory.
  std::string write(const Json& json, const std::string& name = "tok") const {
    const fs::path dir = scratch_ / name;
    fs::create_directories(dir);
    std::ofstream(dir / kHfTokenizerFileName, std::ios::binary) << json.dump(1);
    return dir.string();
  }
  BpeTokenizer load(const Json& json) const {
    HfTokenizer hf = read_hf_tokenizer(write(json));
    return BpeTokenizer(std::move(hf.vocabulary), "hf", std::move(hf.encoding));
  }
  // The message read_hf_tokenizer refuses `json` with ("" when it reads it).
  std::string refusal(const Json& json) const {
    const std::string dir = write(json, "refused");
    try {
      read_hf_tokenizer(dir);
    } catch (const std::runtime_error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(dir + "/tokenizer.json: "), std::string::npos) << message << ": names the file";
      return message;
    }
    return "";
  }
  // Expects the refusal of gpt2_style() changed by `change` to hold each of `parts`.
  void expect_refused(const std::function<void(Json&)>& change, const std::vector<std::string>& parts) const {
    Json json = gpt2_style();
    change(json);
    const std::string message = refusal(json);
    ASSERT_FALSE(message.empty()) << json.dump().substr(0, 300) << " was read";
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << message << "\nlacks: " << part;
  }

  testing::ScratchDir scratch_{"hf_tokenizer_reader"};
};

TEST_F(HfTokenizerReaderTest, ReadsGptTwoStyle) {
  const HfTokenizer hf = read_hf_tokenizer(write(gpt2_style()));
  ASSERT_EQ(hf.vocabulary.size(), 265);
  EXPECT_EQ(hf.vocabulary.tokens[262], kSpaceCat);
  EXPECT_EQ(hf.vocabulary.tokens[264], "<|begin_of_text|>");
  EXPECT_EQ(hf.vocabulary.merges, kReaderMerges);
  EXPECT_EQ(hf.encoding.pretokenizer, Pretokenizer::kGpt2);
  EXPECT_EQ(hf.encoding.whole_pieces, WholePieces::kMerge);
  EXPECT_EQ(hf.encoding.end_of_text, "<|endoftext|>");
  ASSERT_EQ(hf.encoding.added_tokens.size(), 2u);
  EXPECT_TRUE(hf.encoding.added_tokens[0].normalized);
  EXPECT_FALSE(hf.encoding.added_tokens[1].normalized);
}

TEST_F(HfTokenizerReaderTest, EncodesGptTwoStyleToKnownIds) {
  const BpeTokenizer t = load(gpt2_style());
  EXPECT_EQ(t.end_of_text(), 263);
  EXPECT_EQ(t.encode(" the"), (Ids{258}));
  EXPECT_EQ(t.encode("the cat's"), (Ids{'t', 257, ' ', 'c', 'a', 't', 261}));  // Ġcat is not made by merges
  EXPECT_EQ(t.encode("4123"), (Ids{'4', 260}));                                // one piece: 12 (3), 123 (4)
  EXPECT_EQ(t.encode("IT'S"), (Ids{'I', 'T', '\'', 'S'}));                     // contractions are lower case
  // Added tokens are found in the text, wherever they are.
  EXPECT_EQ(t.encode("a<|endoftext|>b"), (Ids{'a', 263, 'b'}));
  EXPECT_EQ(t.encode("<|begin_of_text|>the"), (Ids{264, 't', 257}));
  EXPECT_EQ(t.decode(Ids{264, 't', 257, 263}), "<|begin_of_text|>the<|endoftext|>");
}

TEST_F(HfTokenizerReaderTest, EncodesLlamaThreeStyleToKnownIds) {
  const HfTokenizer hf = read_hf_tokenizer(write(llama3_style()));
  EXPECT_EQ(hf.encoding.pretokenizer, Pretokenizer::kLlama3);
  EXPECT_EQ(hf.encoding.whole_pieces, WholePieces::kVocabularyFirst);
  EXPECT_EQ(hf.vocabulary.merges, kReaderMerges);  // pairs read as strings are
  const BpeTokenizer t = load(llama3_style());
  EXPECT_EQ(t.end_of_text(), 264);                                    // <|end_of_text|>: no <|endoftext|>
  EXPECT_EQ(t.encode("the cat's"), (Ids{'t', 257, 262, 261}));        // ignore_merges: " cat" is a token
  EXPECT_EQ(t.encode("4123"), (Ids{'4', 259, '3'}));                  // "412" "3": numbers in threes
  EXPECT_EQ(t.encode("IT'S"), (Ids{'I', 'T', '\'', 'S'}));            // "'S" a contraction: no merge for it
  EXPECT_EQ(t.encode("<|begin_of_text|>the"), (Ids{263, 't', 257}));  // the template is not applied
  EXPECT_EQ(t.encode("<|endoftext|>"), (Ids{'<', '|', 'e', 'n', 'd', 'o', 'f', 't', 'e', 'x', 't', '|', '>'}));
}

TEST_F(HfTokenizerReaderTest, AnAddedTokenMayRepeatItsVocabularyEntry) {
  Json json = gpt2_style();
  json["model"]["vocab"]["<|endoftext|>"] = 263;  // as GPT-2's tokenizer.json: in both
  EXPECT_EQ(load(json).encode("x<|endoftext|>"), (Ids{'x', 263}));
}

TEST_F(HfTokenizerReaderTest, RefusesOtherModels) {
  expect_refused([](Json& j) { j["model"]["type"] = "WordPiece"; }, {"model.type is \"WordPiece\"", "\"BPE\""});
  expect_refused([](Json& j) { j["model"].erase("type"); }, {"model.type is missing"});
  expect_refused([](Json& j) { j["model"]["byte_fallback"] = true; }, {"model.byte_fallback is true"});
  expect_refused([](Json& j) { j["model"]["dropout"] = 0.1; }, {"model.dropout is 0.1"});
  expect_refused([](Json& j) { j["model"]["continuing_subword_prefix"] = "##"; },
                 {"model.continuing_subword_prefix is \"##\""});
  expect_refused([](Json& j) { j["model"]["end_of_word_suffix"] = "</w>"; }, {"model.end_of_word_suffix is \"</w>\""});
  expect_refused([](Json& j) { j["model"]["ignore_merges"] = "yes"; }, {"model.ignore_merges is \"yes\""});
  expect_refused([](Json& j) { j["model"]["vocab"].erase("!"); }, {"model.vocab has no token for byte 33"});
  expect_refused([](Json& j) { j["model"]["merges"][1] = "h x y"; }, {"model.merges[1] is \"h x y\""});
  expect_refused([](Json& j) { j["model"]["merges"][2] = 5; }, {"model.merges[2] is 5"});
  expect_refused([](Json& j) { j["model"]["merges"][0] = "q z"; },
                 {"model.merges[0] is \"q z\"", "\"qz\" is not in model.vocab"});
  expect_refused([](Json& j) { j["model"]["vocab"]["extra"] = 270; }, {"no token has id 265", "without gaps"});
  expect_refused([](Json& j) { j["model"]["vocab"]["extra"] = 5; }, {"model.vocab gives id 5 to both"});
  expect_refused([](Json& j) { j["model"]["vocab"]["bad"] = -1; }, {"model.vocab[\"bad\"] is -1"});
}

TEST_F(HfTokenizerReaderTest, RefusesWhatChangesTheText) {
  expect_refused([](Json& j) { j["normalizer"] = {{"type", "NFC"}}; }, {"normalizer is {\"type\":\"NFC\"}"});
  expect_refused([](Json& j) { j["truncation"] = {{"max_length", 8}}; }, {"truncation is {\"max_length\":8}"});
  expect_refused([](Json& j) { j["padding"] = {{"length", 8}}; }, {"padding is"});
  expect_refused([](Json& j) { j["decoder"] = {{"type", "Metaspace"}}; }, {"decoder is {\"type\":\"Metaspace\"}"});
  expect_refused([](Json& j) { j["added_tokens"][0]["lstrip"] = true; }, {"added_tokens[0].lstrip is true"});
  expect_refused([](Json& j) { j["added_tokens"][1]["single_word"] = true; }, {"added_tokens[1].single_word is true"});
  expect_refused([](Json& j) { j["added_tokens"][0]["id"] = 'a'; },
                 {"added_tokens[0] gives id 97 to \"<|endoftext|>\", which model.vocab gives to \"a\""});
  expect_refused([](Json& j) { j["added_tokens"][0].erase("id"); }, {"added_tokens[0].id is missing"});
}

TEST_F(HfTokenizerReaderTest, RefusesOtherPreTokenizers) {
  expect_refused(
      [](Json& j) {
        j["pre_tokenizer"] = {{"type", "Whitespace"}};
      },
      {"pre_tokenizer.type is \"Whitespace\"", "ByteLevel"});
  expect_refused([](Json& j) { j["pre_tokenizer"] = nullptr; }, {"pre_tokenizer is null"});
  expect_refused([](Json& j) { j["pre_tokenizer"]["add_prefix_space"] = true; },
                 {"pre_tokenizer.add_prefix_space is true"});
  expect_refused([](Json& j) { j["pre_tokenizer"].erase("add_prefix_space"); },
                 {"pre_tokenizer.add_prefix_space is missing"});
  expect_refused([](Json& j) { j["pre_tokenizer"]["use_regex"] = false; }, {"pre_tokenizer.use_regex is false"});
  const auto split = [](Json& j, const std::string& pattern) {
    j["pre_tokenizer"] = llama3_style()["pre_tokenizer"];
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = pattern;
  };
  expect_refused([&](Json& j) { split(j, R"(\p{L}+|\s+)"); },
                 {"pre_tokenizer.pretokenizers[0].pattern.Regex is \"\\\\p{L}+|\\\\s+\"", "Llama 3's"});
  expect_refused(
      [&](Json& j) {
        split(j, kLlama3Pattern);
        j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
      },
      {"pre_tokenizer.pretokenizers[0].behavior is \"Removed\""});
  expect_refused(
      [&](Json& j) {
        split(j, kLlama3Pattern);
        j["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = true;
      },
      {"pre_tokenizer.pretokenizers[1].use_regex is true"});
  expect_refused(
      [&](Json& j) {
        split(j, kLlama3Pattern);
        j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"String", " "}};
      },
      {"pre_tokenizer.pretokenizers[0].pattern is {\"String\":\" \"}"});
}

TEST_F(HfTokenizerReaderTest, RefusesATokenizerWithoutEndOfText) {
  Json json = llama3_style();
  json["added_tokens"] = {added(263, "<|begin_of_text|>", false), added(264, "<|eot_id|>", false)};
  const std::string message = refusal(json);
  for (const std::string part : {"no end-of-text token", "<|endoftext|>", "<|end_of_text|>",
                                 "its added tokens: <|begin_of_text|>, <|eot_id|>", "add it to added_tokens"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message << "\nlacks: " << part;
  }
}

TEST_F(HfTokenizerReaderTest, RefusesMissingOrInvalidFiles) {
  const fs::path empty = scratch_ / "empty";
  fs::create_directories(empty);
  try {
    read_hf_tokenizer(empty);
    FAIL() << "read a directory without tokenizer.json";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((empty / "tokenizer.json").string() + ": cannot open"), std::string::npos)
        << e.what();
  }
  const std::string dir = write(gpt2_style(), "broken");
  std::ofstream(fs::path(dir) / kHfTokenizerFileName) << "{\"model\": ";
  EXPECT_THROW(read_hf_tokenizer(dir), std::runtime_error);
}

TEST_F(HfTokenizerReaderTest, SpecOfADirectoryOrFileIsKindHfOverTokenizerJson) {
  const std::string dir = write(gpt2_style());
  const std::string file = (fs::path(dir) / kHfTokenizerFileName).string();
  EXPECT_TRUE(names_hf_tokenizer(dir));
  EXPECT_TRUE(names_hf_tokenizer(file));
  for (const std::string& path : {dir, file}) {
    const TokenizerSpec spec = bpe_tokenizer_spec(path, TokenizerKind::kBpe);
    EXPECT_EQ(spec.kind, TokenizerKind::kHf);
    EXPECT_EQ(spec.dir, path);
    EXPECT_EQ(spec.vocab_size, 265);
    EXPECT_EQ(spec.files_hash, hf_tokenizer_hash(dir));
    const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(spec);
    ASSERT_NE(tokenizer, nullptr);
    EXPECT_EQ(tokenizer->name(), "hf");
    EXPECT_EQ(tokenizer->encode("a<|endoftext|> the"), (Ids{'a', 263, 258}));
    EXPECT_EQ(apply_tokenizer_flag(bytes_tokenizer_spec(), path), spec);
  }
  EXPECT_EQ(parse_tokenizer_kind("hf", "test"), TokenizerKind::kHf);
  EXPECT_STREQ(tokenizer_kind_name(TokenizerKind::kHf), "hf");

  // The hash covers tokenizer.json: a changed file is caught when the tokenizer is loaded.
  const TokenizerSpec spec = bpe_tokenizer_spec(dir, TokenizerKind::kBpe);
  Json changed = gpt2_style();
  changed["model"]["merges"].erase(changed["model"]["merges"].begin() + 5);
  std::ofstream(file, std::ios::binary) << changed.dump(1);
  try {
    load_tokenizer(spec);
    FAIL() << "loaded a changed tokenizer.json";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json changed since the data was tokenized"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(apply_tokenizer_flag(spec, dir), std::runtime_error);

  // A directory with vocab.json too is read as GPT-2-format files.
  std::ofstream(fs::path(dir) / "vocab.json") << "{}";
  EXPECT_FALSE(names_hf_tokenizer(dir));
  EXPECT_TRUE(names_hf_tokenizer(file));
}

}  // namespace
}  // namespace tessera
