// Reading and writing vocab.json (nlohmann-json) and merges.txt.
#include "tessera/text/tokenizer/bpe_vocabulary.hpp"

#include <xxhash.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_set>

#include "tessera/text/tokenizer/tokenizer_file.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBpeFilesHint =
    "a BPE tokenizer directory holds vocab.json and merges.txt, or a Hugging Face tokenizer.json";

std::vector<std::string> read_vocab_json(const fs::path& path) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(detail::read_tokenizer_file(path, "vocabulary file", kBpeFilesHint));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!json.is_object() || json.empty()) {
    throw std::runtime_error(
        path.string() + ": expected a JSON object {\"token\": id, ...} of at least one token, found " +
        (json.is_object() ? std::string("an empty object") : std::string("a JSON ") + json.type_name()));
  }
  std::vector<std::string> tokens(json.size());
  std::vector<bool> seen(json.size(), false);
  for (const auto& [text, id] : json.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= static_cast<std::int64_t>(tokens.size())) {
      throw std::runtime_error(path.string() + ": token \"" + text + "\" has id " + id.dump() + "; ids must be 0.." +
                               std::to_string(tokens.size() - 1) + " (one per token)");
    }
    const auto i = static_cast<std::size_t>(id.get<std::int64_t>());
    if (seen[i]) throw std::runtime_error(path.string() + ": id " + std::to_string(i) + " is given to two tokens");
    seen[i] = true;
    tokens[i] = text;
  }
  return tokens;
}

std::vector<std::pair<std::string, std::string>> read_merges(const fs::path& path,
                                                             const std::unordered_set<std::string>& known) {
  const std::string text = detail::read_tokenizer_file(path, "merges file", kBpeFilesHint);
  std::vector<std::pair<std::string, std::string>> merges;
  std::size_t line_number = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos) {
      throw std::runtime_error(path.string() + ":" + std::to_string(line_number) + ": '" + line +
                               "' is not a merge; each line holds two tokens separated by one space");
    }
    std::string left = line.substr(0, space), right = line.substr(space + 1);
    for (const std::string& token : {left, right, left + right}) {
      if (known.count(token) == 0) {
        throw std::runtime_error(path.string() + ":" + std::to_string(line_number) + ": '" + token +
                                 "' is not in vocab.json; the two files do not belong together");
      }
    }
    merges.emplace_back(std::move(left), std::move(right));
  }
  return merges;
}

}  // namespace

BpeVocabulary read_bpe_vocabulary(const fs::path& dir) {
  BpeVocabulary vocabulary;
  vocabulary.tokens = read_vocab_json(dir / kVocabFileName);
  const std::unordered_set<std::string> known(vocabulary.tokens.begin(), vocabulary.tokens.end());
  vocabulary.merges = read_merges(dir / kMergesFileName, known);
  return vocabulary;
}

void write_bpe_vocabulary(const fs::path& dir, const BpeVocabulary& vocabulary) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (std::size_t id = 0; id < vocabulary.tokens.size(); ++id) json[vocabulary.tokens[id]] = id;
  detail::write_tokenizer_file(dir / kVocabFileName, json.dump(-1, ' ', /*ensure_ascii=*/true) + "\n");
  std::string merges = "#version: 0.2\n";
  for (const auto& [left, right] : vocabulary.merges) merges += left + " " + right + "\n";
  detail::write_tokenizer_file(dir / kMergesFileName, merges);
}

std::uint64_t bpe_files_hash(const fs::path& dir) {
  const std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> owner(XXH64_createState(), XXH64_freeState);
  XXH64_state_t* state = owner.get();
  XXH64_reset(state, 0);
  for (const char* name : {kVocabFileName, kMergesFileName}) {
    const std::string bytes = detail::read_tokenizer_file(
        dir / name, std::string(name) == kVocabFileName ? "vocabulary file" : "merges file", kBpeFilesHint);
    XXH64_update(state, bytes.data(), bytes.size());
  }
  return XXH64_digest(state);
}

}  // namespace tessera
