// XXH3-64 from libxxhash's header, compiled here (XXH_INLINE_ALL: every function static to this
// file) once per CPU kernel level, so that XXH3 uses the vector instructions of the level.
#include "tessera/checkpointing/format/xxh3_level.hpp"

// GCC 12 warns that AVX-512's _mm512_undefined_epi32() is uninitialized, where XXH3 inlines it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define XXH_INLINE_ALL
#include <xxhash.h>
#pragma GCC diagnostic pop

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

std::uint64_t hash(const void* data, std::size_t bytes) {
  return static_cast<std::uint64_t>(XXH3_64bits(data, bytes));
}

void update(void* state, const void* data, std::size_t bytes) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, bytes);
}

std::uint64_t digest(const void* state) {
  return static_cast<std::uint64_t>(XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state)));
}

}  // namespace

const Xxh3Functions& xxh3_functions() {
  static const Xxh3Functions functions{&hash, &update, &digest};
  return functions;
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
