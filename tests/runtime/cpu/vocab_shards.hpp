// Helpers shared by the vocabulary-sharded kernel tests (CPU and CUDA): a vocabulary split into
// uneven contiguous shards as tensor parallelism splits it (sizes differing by at most 1, the
// larger first), and the rows or columns of a host tensor that one shard holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::test {

// The vocabulary rows [first, first + rows) one rank holds.
struct VocabShard {
  std::int64_t first = 0;
  std::int64_t rows = 0;
};

// `vocab` rows split across `parts` ranks in order, sizes differing by at most 1.
inline std::vector<VocabShard> split_vocab(std::int64_t vocab, std::int64_t parts) {
  std::vector<VocabShard> shards;
  std::int64_t first = 0;
  for (std::int64_t p = 0; p < parts; ++p) {
    const std::int64_t rows = vocab / parts + (p < vocab % parts ? 1 : 0);
    shards.push_back({first, rows});
    first += rows;
  }
  return shards;
}

inline std::string describe_shard(const VocabShard& s, std::int64_t vocab) {
  return "shard [" + std::to_string(s.first) + ", " + std::to_string(s.first + s.rows) + ") of " +
         std::to_string(vocab);
}

// The rows [s.first, s.first + s.rows) of a (vocab,c) table.
template <typename T>
std::vector<T> shard_rows(const std::vector<T>& table, const VocabShard& s, std::int64_t c) {
  return {table.begin() + s.first * c, table.begin() + (s.first + s.rows) * c};
}

// The columns [s.first, s.first + s.rows) of an (n,vocab) matrix, as an (n,s.rows) matrix.
template <typename T>
std::vector<T> shard_columns(const std::vector<T>& m, const VocabShard& s, std::int64_t n, std::int64_t vocab) {
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(n * s.rows));
  for (std::int64_t i = 0; i < n; ++i) {
    out.insert(out.end(), m.begin() + i * vocab + s.first, m.begin() + i * vocab + s.first + s.rows);
  }
  return out;
}

// Writes an (n,s.rows) matrix back into the columns [s.first, s.first + s.rows) of an (n,vocab) one.
template <typename T>
void put_shard_columns(std::vector<T>& m, const std::vector<T>& part, const VocabShard& s, std::int64_t n,
                       std::int64_t vocab) {
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < s.rows; ++j) m[i * vocab + s.first + j] = part[i * s.rows + j];
  }
}

}  // namespace tessera::test
