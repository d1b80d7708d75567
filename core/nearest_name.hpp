// The "did you mean" of every message about an unknown name: the candidate nearest to a word a
// user mistyped (a flag, a config-file key, a subcommand), by edit distance.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tessera {

// Levenshtein distance: insertions, deletions and substitutions of one character each cost 1.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate `word` is the start of, when it is the start of exactly one (an abbreviation:
// `--lay` -> "layers", which prefix guessing would have taken); otherwise the nearest candidate, or
// "" when none is near: at most max(2, |word| / 3) edits away (`--stpes` -> "steps", `infoo` ->
// "info"; nothing for `--frobnicate`). Ties go to the first.
std::string nearest_name(const std::vector<std::string>& candidates, const std::string& word);

}  // namespace tessera
