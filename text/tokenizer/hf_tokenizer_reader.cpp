// tokenizer.json, field by field: what Tessera encodes as the `tokenizers` library does, and a
// refusal naming the field for everything else.
#include "tessera/text/tokenizer/hf_tokenizer_reader.hpp"

#include <xxhash.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "tessera/text/tokenizer/byte_unicode.hpp"
#include "tessera/text/tokenizer/tokenizer_file.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kPreTokenizersRead =
    "a ByteLevel pre-tokenizer with use_regex true (GPT-2's pattern), or a Sequence of a Split with GPT-2's or "
    "Llama 3's pattern (behavior Isolated) followed by a ByteLevel with use_regex false";
constexpr std::size_t kShownChars = 200;  // a refused value is shown up to this many characters

// The fields of one tokenizer.json, and the refusal that names them.
class Fields {
 public:
  explicit Fields(std::string file) : file_(std::move(file)) {}

  // "FILE: FIELD is VALUE; Tessera reads READS".
  [[noreturn]] void refuse(const std::string& field, const Json* value, const std::string& reads) const {
    std::string shown = value == nullptr ? "missing" : value->dump(-1, ' ', false, Json::error_handler_t::replace);
    if (shown.size() > kShownChars) shown = shown.substr(0, kShownChars) + "...";
    throw std::runtime_error(file_ + ": " + field + " is " + shown + "; Tessera reads " + reads);
  }
  [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error(file_ + ": " + what); }

  static const Json* find(const Json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }
  // An object's "type" when it is a string, else "" (absent, or of another JSON type: refused by the
  // caller as a type it does not read).
  static std::string type_of(const Json& object) {
    const Json* type = find(object, "type");
    return type != nullptr && type->is_string() ? type->get<std::string>() : "";
  }
  // object[key] as a string; refused when missing or not a string.
  std::string string(const Json& object, const std::string& where, const char* key, const std::string& reads) const {
    const Json* value = find(object, key);
    if (value == nullptr || !value->is_string()) refuse(where + "." + key, value, reads);
    return value->get<std::string>();
  }
  // object[key] as a bool, `absent` when missing; refused when it is not `wanted` (when given).
  bool flag(const Json& object, const std::string& where, const char* key, bool absent, const std::string& reads,
            std::optional<bool> wanted = std::nullopt) const {
    const Json* value = find(object, key);
    if (value != nullptr && !value->is_boolean()) refuse(where + "." + key, value, reads);
    const bool b = value == nullptr ? absent : value->get<bool>();
    if (wanted && b != *wanted) refuse(where + "." + key, value, reads);  // "missing": the default is not it
    return b;
  }

 private:
  std::string file_;
};

// A field that must be null or absent (an empty Sequence counts as absent for the normalizer).
void require_null(const Fields& f, const Json& root, const char* key, const std::string& reads) {
  const Json* value = Fields::find(root, key);
  if (value == nullptr || value->is_null()) return;
  if (value->is_object() && Fields::type_of(*value) == "Sequence") {
    const Json* inner = Fields::find(*value, "normalizers");
    if (inner != nullptr && inner->is_array() && inner->empty()) return;
  }
  f.refuse(key, value, reads);
}

// A ByteLevel pre-tokenizer at `where` with add_prefix_space false and use_regex as given.
void check_byte_level(const Fields& f, const Json& byte_level, const std::string& where, bool use_regex) {
  const std::string reads = std::string("a ByteLevel pre-tokenizer with add_prefix_space false and use_regex ") +
                            (use_regex ? "true (GPT-2's pattern)" : "false after a Split");
  f.flag(byte_level, where, "add_prefix_space", true, reads, false);
  f.flag(byte_level, where, "use_regex", true, reads, use_regex);
}

// The pattern of a Split pre-tokenizer at `where`.
Pretokenizer read_split(const Fields& f, const Json& split, const std::string& where) {
  const Json* pattern = Fields::find(split, "pattern");
  const Json* regex = pattern != nullptr && pattern->is_object() ? Fields::find(*pattern, "Regex") : nullptr;
  const std::string reads_pattern =
      std::string("a Regex pattern, GPT-2's (") + kGpt2Pattern + ") or Llama 3's (" + kLlama3Pattern + ")";
  if (regex == nullptr || !regex->is_string()) f.refuse(where + ".pattern", pattern, reads_pattern);
  Pretokenizer pretokenizer = Pretokenizer::kGpt2;
  if (*regex == kLlama3Pattern) {
    pretokenizer = Pretokenizer::kLlama3;
  } else if (*regex != kGpt2Pattern) {
    f.refuse(where + ".pattern.Regex", regex, reads_pattern);
  }
  if (f.string(split, where, "behavior", "behavior \"Isolated\"") != "Isolated") {
    f.refuse(where + ".behavior", Fields::find(split, "behavior"), "behavior \"Isolated\" (each match its own piece)");
  }
  f.flag(split, where, "invert", false, "invert false", false);
  return pretokenizer;
}

Pretokenizer read_pre_tokenizer(const Fields& f, const Json& pre, const std::string& where) {
  if (!pre.is_object()) f.refuse(where, &pre, kPreTokenizersRead);
  const std::string type = f.string(pre, where, "type", kPreTokenizersRead);
  if (type == "ByteLevel") {
    check_byte_level(f, pre, where, true);
    return Pretokenizer::kGpt2;
  }
  if (type != "Sequence") f.refuse(where + ".type", Fields::find(pre, "type"), kPreTokenizersRead);
  const Json* list = Fields::find(pre, "pretokenizers");
  const std::string list_where = where + ".pretokenizers";
  if (list == nullptr || !list->is_array() || list->empty() || list->size() > 2) {
    f.refuse(list_where, list, kPreTokenizersRead);
  }
  if (list->size() == 1) return read_pre_tokenizer(f, list->at(0), list_where + "[0]");
  const Json& split = list->at(0);
  const Json& byte_level = list->at(1);
  if (!split.is_object() || Fields::type_of(split) != "Split") {
    f.refuse(list_where + "[0]", &split, kPreTokenizersRead);
  }
  if (!byte_level.is_object() || Fields::type_of(byte_level) != "ByteLevel") {
    f.refuse(list_where + "[1]", &byte_level, kPreTokenizersRead);
  }
  const Pretokenizer pretokenizer = read_split(f, split, list_where + "[0]");
  check_byte_level(f, byte_level, list_where + "[1]", false);
  return pretokenizer;
}

void check_decoder(const Fields& f, const Json& root) {
  const Json* decoder = Fields::find(root, "decoder");
  if (decoder == nullptr || decoder->is_null()) return;
  if (!decoder->is_object() || Fields::type_of(*decoder) != "ByteLevel") {
    f.refuse("decoder", decoder, "a ByteLevel decoder (or none)");
  }
}

// model's options (everything but vocab and merges).
WholePieces read_model_options(const Fields& f, const Json& model) {
  const std::string bpe = "a byte-level BPE (model.type \"BPE\")";
  if (f.string(model, "model", "type", bpe) != "BPE") f.refuse("model.type", Fields::find(model, "type"), bpe);
  if (const Json* dropout = Fields::find(model, "dropout");
      dropout != nullptr && !dropout->is_null() && !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    f.refuse("model.dropout", dropout, "BPE without dropout (null)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const Json* value = Fields::find(model, key);
    if (value != nullptr && !value->is_null() && *value != "") {
      f.refuse(std::string("model.") + key, value, "a byte-level BPE without one (null or \"\")");
    }
  }
  f.flag(model, "model", "byte_fallback", false,
         "byte-level BPE, whose 256 byte tokens cover every text (byte_fallback false)", false);
  const bool ignore_merges = f.flag(model, "model", "ignore_merges", false, "true or false");
  return ignore_merges ? WholePieces::kVocabularyFirst : WholePieces::kMerge;
}

// model.vocab: token -> id.
std::unordered_map<std::string, std::int32_t> read_vocab(const Fields& f, const Json& model) {
  const Json* vocab = Fields::find(model, "vocab");
  if (vocab == nullptr || !vocab->is_object() || vocab->empty()) {
    f.refuse("model.vocab", vocab, "an object {\"token\": id, ...} of at least one token");
  }
  std::unordered_map<std::string, std::int32_t> ids;
  ids.reserve(vocab->size());
  for (const auto& [token, id] : vocab->items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > INT32_MAX - 1) {
      f.refuse("model.vocab[\"" + token + "\"]", &id, "ids that are integers from 0");
    }
    ids.emplace(token, static_cast<std::int32_t>(id.get<std::int64_t>()));
  }
  for (int b = 0; b < 256; ++b) {
    const std::string text = bytes_to_token_text(std::string(1, static_cast<char>(b)));
    if (ids.count(text) == 0) {
      f.fail("model.vocab has no token for byte " + std::to_string(b) + " (\"" + text +
             "\"); Tessera reads a byte-level BPE, whose vocabulary holds all 256 bytes");
    }
  }
  return ids;
}

std::vector<std::pair<std::string, std::string>> read_merges(const Fields& f, const Json& model,
                                                             const std::unordered_map<std::string, std::int32_t>& ids) {
  const Json* merges = Fields::find(model, "merges");
  const std::string reads = "merges as \"left right\" strings or [\"left\", \"right\"] pairs of tokens in model.vocab";
  if (merges == nullptr || !merges->is_array()) f.refuse("model.merges", merges, reads);
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges->size());
  for (std::size_t r = 0; r < merges->size(); ++r) {
    const Json& merge = merges->at(r);
    const std::string where = "model.merges[" + std::to_string(r) + "]";
    std::string left, right;
    if (merge.is_string()) {
      const std::string text = merge.get<std::string>();
      const std::size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) f.refuse(where, &merge, reads);
      left = text.substr(0, space), right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      left = merge[0].get<std::string>(), right = merge[1].get<std::string>();
    } else {
      f.refuse(where, &merge, reads);
    }
    for (const std::string& token : {left, right, left + right}) {
      if (ids.count(token) == 0) {
        f.fail(where + " is " + merge.dump() + ", but \"" + token +
               "\" is not in model.vocab; Tessera reads merges of tokens in model.vocab into one");
      }
    }
    out.emplace_back(std::move(left), std::move(right));
  }
  return out;
}

// added_tokens, into `tokens` (id -> token, model.vocab's already there) and the encoding.
std::vector<AddedToken> read_added_tokens(const Fields& f, const Json& root,
                                          std::map<std::int32_t, std::string>& tokens) {
  std::vector<AddedToken> added;
  const Json* list = Fields::find(root, "added_tokens");
  if (list == nullptr || list->is_null()) return added;
  if (!list->is_array()) f.refuse("added_tokens", list, "an array of added tokens");
  for (std::size_t k = 0; k < list->size(); ++k) {
    const Json& entry = list->at(k);
    const std::string where = "added_tokens[" + std::to_string(k) + "]";
    if (!entry.is_object()) f.refuse(where, &entry, "objects {\"id\": .., \"content\": .., ...}");
    const Json* id = Fields::find(entry, "id");
    if (id == nullptr || !id->is_number_integer() || id->get<std::int64_t>() < 0 ||
        id->get<std::int64_t>() > INT32_MAX - 1) {
      f.refuse(where + ".id", id, "ids that are integers from 0");
    }
    AddedToken token;
    token.id = static_cast<std::int32_t>(id->get<std::int64_t>());
    token.content = f.string(entry, where, "content", "the token's text as a string");
    if (token.content.empty()) f.refuse(where + ".content", Fields::find(entry, "content"), "a non-empty token text");
    for (const char* key : {"single_word", "lstrip", "rstrip"}) {
      f.flag(entry, where, key, false, "added tokens matched wherever they occur (single_word, lstrip, rstrip false)",
             false);
    }
    token.normalized = f.flag(entry, where, "normalized", true, "true or false");
    const auto [at, inserted] = tokens.emplace(token.id, token.content);
    if (!inserted && at->second != token.content) {
      f.fail(where + " gives id " + std::to_string(token.id) + " to \"" + token.content +
             "\", which model.vocab gives to \"" + at->second + "\"; Tessera reads one token per id");
    }
    added.push_back(std::move(token));
  }
  return added;
}

}  // namespace

fs::path hf_tokenizer_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) ? path / kHfTokenizerFileName : path;
}

bool names_hf_tokenizer(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return fs::exists(path, ec);
  return fs::exists(path / kHfTokenizerFileName, ec) && !fs::exists(path / kVocabFileName, ec);
}

HfTokenizer read_hf_tokenizer(const fs::path& path) {
  const fs::path file = hf_tokenizer_file(path);
  const Fields f(file.string());
  Json root;
  try {
    root = Json::parse(detail::read_tokenizer_file(
        file, "tokenizer file", "a tokenizer directory holds tokenizer.json, or vocab.json and merges.txt"));
  } catch (const Json::exception& e) {
    f.fail(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!root.is_object()) f.refuse("the top level", &root, "a JSON object, as the tokenizers library writes");
  require_null(f, root, "truncation", "whole texts (truncation null)");
  require_null(f, root, "padding", "texts without padding (padding null)");
  require_null(f, root, "normalizer", "tokenizers without a normalizer (null): the text is encoded as it is");
  check_decoder(f, root);

  HfTokenizer out;
  const Json* pre = Fields::find(root, "pre_tokenizer");
  if (pre == nullptr) f.refuse("pre_tokenizer", pre, kPreTokenizersRead);
  out.encoding.pretokenizer = read_pre_tokenizer(f, *pre, "pre_tokenizer");
  const Json* model = Fields::find(root, "model");
  if (model == nullptr || !model->is_object()) f.refuse("model", model, "a byte-level BPE model object");
  out.encoding.whole_pieces = read_model_options(f, *model);
  const std::unordered_map<std::string, std::int32_t> ids = read_vocab(f, *model);
  out.vocabulary.merges = read_merges(f, *model, ids);

  std::map<std::int32_t, std::string> tokens;
  for (const auto& [token, id] : ids) {
    const auto [at, inserted] = tokens.emplace(id, token);
    if (!inserted) {
      f.fail("model.vocab gives id " + std::to_string(id) + " to both \"" + at->second + "\" and \"" + token +
             "\"; Tessera reads one token per id");
    }
  }
  out.encoding.added_tokens = read_added_tokens(f, root, tokens);
  const std::int32_t n = tokens.rbegin()->first + 1;
  if (static_cast<std::size_t>(n) != tokens.size()) {
    std::int32_t missing = 0;
    while (tokens.count(missing) != 0) ++missing;
    f.fail("no token has id " + std::to_string(missing) + " (the largest is " + std::to_string(n - 1) +
           "); Tessera reads ids 0..n-1 without gaps, over model.vocab and added_tokens together");
  }
  out.vocabulary.tokens.reserve(tokens.size());
  for (auto& [id, token] : tokens) out.vocabulary.tokens.push_back(std::move(token));

  std::string names;
  for (const std::string& eot : {std::string(kEndOfTextToken), std::string(kEndOfTextTokenLlama3)}) {
    for (const std::string& token : out.vocabulary.tokens) {
      if (token == eot) {
        out.encoding.end_of_text = eot;
        return out;
      }
    }
  }
  for (const AddedToken& token : out.encoding.added_tokens) names += (names.empty() ? "" : ", ") + token.content;
  f.fail("has no end-of-text token: neither \"" + std::string(kEndOfTextToken) + "\" nor \"" + kEndOfTextTokenLlama3 +
         "\" is in added_tokens or model.vocab (its added tokens: " + (names.empty() ? "none" : names) +
         "); Tessera separates documents with one of them: add it to added_tokens");
}

std::uint64_t hf_tokenizer_hash(const fs::path& path) {
  const std::string bytes = detail::read_tokenizer_file(hf_tokenizer_file(path), "tokenizer file",
                                                        "a tokenizer directory holds tokenizer.json");
  return XXH64(bytes.data(), bytes.size(), 0);
}

}  // namespace tessera
