// xxh64 through libxxhash (the reference implementation, Debian's libxxhash-dev).
#include "tessera/checkpointing/format/checksum.hpp"

#include <xxhash.h>

namespace tessera {

std::uint64_t xxh64(const void* data, std::size_t bytes, std::uint64_t seed) {
  return static_cast<std::uint64_t>(XXH64(data, bytes, static_cast<XXH64_hash_t>(seed)));
}

}  // namespace tessera
