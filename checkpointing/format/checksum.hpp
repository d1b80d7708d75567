// The checksums of checkpoint data: XXH64 and XXH3-64, the 64-bit xxHashes of a byte range (seed
// 0), the same values as the reference implementation (`xxhsum -H1`, `xxhsum -H3`).
//
// Every chunk of a shard file's state datasets is stored with its checksum; which one a file uses
// is its ChunkChecksum. Format 3 files use XXH64; format 4 files name theirs in the attribute
// `chunk_checksum`, and new checkpoints use XXH3-64, about 4x faster per core than XXH64 (on this
// project's AVX-512 machine, 46 against 10.5 GB/s per CPU-second over 512 KiB pieces in cache):
// hashing is then a small share of a load beside the disk and the kernel's copy out of the page
// cache. The meta file's digests (meta_digests.hpp) stay XXH64: a few hundred small values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

enum class ChunkChecksum { kXxh64, kXxh3_64 };

std::uint64_t xxh64(const void* data, std::size_t bytes, std::uint64_t seed = 0);
std::uint64_t xxh3_64(const void* data, std::size_t bytes);
std::uint64_t chunk_checksum(ChunkChecksum kind, const void* data, std::size_t bytes);

// "xxh64" | "xxh3_64": the value of the attribute `chunk_checksum` and the suffix of the tables.
const char* chunk_checksum_name(ChunkChecksum kind);
// nullopt for a name this build does not know.
std::optional<ChunkChecksum> parse_chunk_checksum(std::string_view name);

// One checksum over bytes handed in pieces (the same value as chunk_checksum of them all at once):
// a reader hashes each piece right after it arrived, while it is still in the core's cache.
class ChunkHasher {
 public:
  ChunkHasher();
  ~ChunkHasher();
  ChunkHasher(const ChunkHasher&) = delete;
  ChunkHasher& operator=(const ChunkHasher&) = delete;
  void reset(ChunkChecksum kind);
  void update(const void* data, std::size_t bytes);
  std::uint64_t digest() const;

 private:
  struct State;
  ChunkChecksum kind_ = ChunkChecksum::kXxh64;
  std::unique_ptr<State> state_;
};

// The table beside dataset `dataset` holding its chunks' checksums: "master_xxh3_64".
std::string checksum_table_name(const std::string& dataset, ChunkChecksum kind);

}  // namespace tessera
