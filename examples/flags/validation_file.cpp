// default_validation_file: llm.c's <name>_train / <name>_val pair, then Tessera's <stem>_val.
#include "flags/validation_file.hpp"

#include <filesystem>
#include <vector>

namespace tessera {

std::optional<std::string> default_validation_file(const std::string& train_file) {
  const std::filesystem::path train(train_file);
  const std::string stem = train.stem().string(), ext = train.extension().string();
  std::vector<std::filesystem::path> candidates;
  const std::string suffix = "_train";
  if (stem.size() > suffix.size() && stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0) {
    candidates.push_back(train.parent_path() / (stem.substr(0, stem.size() - suffix.size()) + "_val" + ext));
  }
  candidates.push_back(train.parent_path() / (stem + "_val" + ext));
  for (const auto& candidate : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
  }
  return std::nullopt;
}

}  // namespace tessera
