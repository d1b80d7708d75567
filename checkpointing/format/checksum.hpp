// XXH64: the 64-bit xxHash of a byte range (seed 0 unless given), used as the per-chunk checksum of
// checkpoint datasets, computed by libxxhash. Fast enough (several GB/s per core) that verifying on load costs little
// beside the disk; the same values as the reference implementation (`xxhsum -H1`).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera {

std::uint64_t xxh64(const void* data, std::size_t bytes, std::uint64_t seed = 0);

}  // namespace tessera
