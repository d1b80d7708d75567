// TokenDataset: one or more token files read as one concatenated token sequence, and views
// (slices) of it, e.g. the last 10% of the tokens for validation.
//
// Paths may be glob(3) patterns ("data/fineweb_train_*.bin"); each pattern's matches are sorted
// by byte-wise path order (independent of the locale), and patterns keep the order they are given in.
// Copies are cheap and share the open (memory-mapped) files; a dataset is immutable, so it can be
// read from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/text/data/token_file.hpp"

namespace tessera {

// Expands each pattern with glob(3) and sorts each pattern's matches. A pattern with wildcard
// characters (* ? [) that matches nothing is an error naming the pattern; a plain path is passed
// through as is (opening it reports a missing file).
std::vector<std::string> expand_token_paths(std::span<const std::string> patterns);

class TokenDataset {
 public:
  TokenDataset() = default;  // empty: no files, no tokens
  // Opens every file (see expand_token_paths) in `format`. Throws std::runtime_error naming the
  // file or pattern that is missing or invalid.
  explicit TokenDataset(std::span<const std::string> paths, TokenFileFormat format = TokenFileFormat::kLlmc);
  explicit TokenDataset(const std::vector<std::string>& paths, TokenFileFormat format = TokenFileFormat::kLlmc)
      : TokenDataset(std::span<const std::string>(paths), format) {}
  explicit TokenDataset(const std::string& path, TokenFileFormat format = TokenFileFormat::kLlmc)
      : TokenDataset(std::span<const std::string>(&path, 1), format) {}

  std::int64_t num_tokens() const { return end_ - begin_; }
  // Token i of this view, 0 <= i < num_tokens(); throws std::out_of_range outside.
  std::int32_t token(std::int64_t i) const;
  // Copies tokens [first, first + count) of this view into out, across file boundaries. Each file
  // read is checked first (TokenFile::check_unchanged): a data file replaced, truncated or rewritten
  // since it was opened throws std::runtime_error naming it, instead of feeding other samples.
  void read(std::int64_t first, std::int64_t count, std::int32_t* out /*(count) i32*/) const;

  // The view of tokens [first_token, first_token + count) of this view, sharing the files.
  // Throws std::out_of_range when the range is not inside this view.
  TokenDataset slice(std::int64_t first_token, std::int64_t count) const;

  // The tokenizer record of the files (all files must agree: the constructor checks); nullopt when
  // they have none.
  const std::optional<TokenizerSpec>& tokenizer() const;

  // The files behind this dataset (all of them, also for a slice).
  std::vector<std::string> paths() const;
  // The open files behind this dataset (all of them, also for a slice); empty for an empty dataset.
  std::span<const TokenFile> files() const;
  // For messages: "data/x.bin", "data/a.bin ... data/c.bin (3 files)", plus " tokens [a, b)" for a
  // slice that is not the whole dataset.
  std::string describe() const;

 private:
  struct Files {
    std::vector<TokenFile> files;
    std::vector<std::int64_t> starts;  // starts[i] = first global token of files[i]; back() = total
  };

  std::shared_ptr<const Files> files_;
  std::int64_t begin_ = 0;  // global token range of this view
  std::int64_t end_ = 0;
};

// Splits off the last `val_fraction` of the tokens (rounded down) as validation:
// returns {train, validation}. val_fraction must be in [0, 1).
std::pair<TokenDataset, TokenDataset> split_train_val(const TokenDataset& dataset, double val_fraction);

}  // namespace tessera
