// TokenDataset: glob expansion, concatenation of token files, and slicing.
#include "tessera/text/data/token_dataset.hpp"

#include <glob.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera {
namespace {

bool has_wildcard(const std::string& pattern) { return pattern.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> glob_sorted(const std::string& pattern) {
  glob_t result{};
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &result);
  std::vector<std::string> matches;
  if (rc == 0) matches.assign(result.gl_pathv, result.gl_pathv + result.gl_pathc);
  ::globfree(&result);
  if (rc == GLOB_NOSPACE) throw std::runtime_error(pattern + ": out of memory while expanding the pattern");
  if (rc == GLOB_ABORTED) throw std::runtime_error(pattern + ": read error while expanding the pattern");
  std::sort(matches.begin(), matches.end());
  return matches;
}

// Equal records, where copies of the same files (equal hash) in other directories count as equal.
bool same_tokenizer(const std::optional<TokenizerSpec>& a, const std::optional<TokenizerSpec>& b) {
  if (!a || !b) return !a && !b;
  if (a->kind != b->kind || a->vocab_size != b->vocab_size || a->files_hash != b->files_hash) return false;
  return a->files_hash != 0 || a->dir == b->dir;
}

}  // namespace

std::vector<std::string> expand_token_paths(std::span<const std::string> patterns) {
  std::vector<std::string> paths;
  for (const std::string& pattern : patterns) {
    if (!has_wildcard(pattern)) {
      paths.push_back(pattern);
      continue;
    }
    std::vector<std::string> matches = glob_sorted(pattern);
    if (matches.empty()) {
      throw std::runtime_error(pattern +
                               ": no token files match this pattern; check the path, or run "
                               "tessera_prepare to create the files");
    }
    paths.insert(paths.end(), matches.begin(), matches.end());
  }
  return paths;
}

TokenDataset::TokenDataset(std::span<const std::string> paths, TokenFileFormat format) {
  auto files = std::make_shared<Files>();
  files->starts.push_back(0);
  for (const std::string& path : expand_token_paths(paths)) {
    files->files.push_back(TokenFile::open(path, format));
    files->starts.push_back(files->starts.back() + files->files.back().num_tokens());
    const TokenFile& first = files->files.front();
    const TokenFile& last = files->files.back();
    if (!same_tokenizer(last.tokenizer(), first.tokenizer())) {
      const auto name = [](const TokenFile& f) {
        return f.tokenizer() ? f.tokenizer()->describe() : "no tokenizer record";
      };
      throw std::runtime_error(last.path() + " was made by another tokenizer (" + name(last) + ") than " +
                               first.path() + " (" + name(first) + "); train on files tokenized alike");
    }
  }
  end_ = files->starts.back();
  files_ = std::move(files);
}

std::int32_t TokenDataset::token(std::int64_t i) const {
  if (i < 0 || i >= num_tokens()) {
    throw std::out_of_range("token " + std::to_string(i) + " is outside " + describe() + " (" +
                            std::to_string(num_tokens()) + " tokens)");
  }
  std::int32_t value = 0;
  read(i, 1, &value);
  return value;
}

void TokenDataset::read(std::int64_t first, std::int64_t count, std::int32_t* out) const {
  if (first < 0 || count < 0 || first + count > num_tokens()) {
    throw std::out_of_range("tokens [" + std::to_string(first) + ", " + std::to_string(first + count) +
                            ") are outside " + describe() + " (" + std::to_string(num_tokens()) + " tokens)");
  }
  if (count == 0) return;
  std::int64_t global = begin_ + first;
  const std::int64_t global_end = global + count;
  const std::vector<std::int64_t>& starts = files_->starts;
  // The file holding `global`: the last one starting at or before it (skipping empty files).
  auto it = std::upper_bound(starts.begin(), starts.end(), global);
  std::size_t f = static_cast<std::size_t>(it - starts.begin()) - 1;
  while (global < global_end) {
    const TokenFile& file = files_->files[f];
    const std::int64_t local = global - starts[f];
    const std::int64_t n = std::min(global_end, starts[f + 1]) - global;
    file.check_unchanged();  // before reading: a truncated mapping would end the process
    file.copy_tokens(local, n, out);
    out += n;
    global += n;
    ++f;
  }
}

TokenDataset TokenDataset::slice(std::int64_t first_token, std::int64_t count) const {
  if (first_token < 0 || count < 0 || first_token + count > num_tokens()) {
    throw std::out_of_range("slice [" + std::to_string(first_token) + ", " + std::to_string(first_token + count) +
                            ") is outside " + describe() + " (" + std::to_string(num_tokens()) + " tokens)");
  }
  TokenDataset view = *this;
  view.begin_ = begin_ + first_token;
  view.end_ = view.begin_ + count;
  return view;
}

std::span<const TokenFile> TokenDataset::files() const {
  if (!files_) return {};
  return files_->files;
}

const std::optional<TokenizerSpec>& TokenDataset::tokenizer() const {
  static const std::optional<TokenizerSpec> none;
  return files_ && !files_->files.empty() ? files_->files.front().tokenizer() : none;
}

std::vector<std::string> TokenDataset::paths() const {
  std::vector<std::string> out;
  if (files_) {
    for (const TokenFile& file : files_->files) out.push_back(file.path());
  }
  return out;
}

std::string TokenDataset::describe() const {
  const std::vector<std::string> names = paths();
  std::string text;
  if (names.empty()) {
    text = "empty token dataset";
  } else if (names.size() == 1) {
    text = names.front();
  } else {
    text = names.front() + " ... " + names.back() + " (" + std::to_string(names.size()) + " files)";
  }
  const std::int64_t total = files_ ? files_->starts.back() : 0;
  if (begin_ != 0 || end_ != total) {
    text += " tokens [" + std::to_string(begin_) + ", " + std::to_string(end_) + ")";
  }
  return text;
}

std::pair<TokenDataset, TokenDataset> split_train_val(const TokenDataset& dataset, double val_fraction) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {
    throw std::invalid_argument("validation fraction " + std::to_string(val_fraction) +
                                " is outside [0, 1); use e.g. 0.1 to hold out the last 10% of the tokens");
  }
  const std::int64_t total = dataset.num_tokens();
  const auto val = static_cast<std::int64_t>(std::floor(static_cast<double>(total) * val_fraction));
  return {dataset.slice(0, total - val), dataset.slice(total - val, val)};
}

}  // namespace tessera
