// The XXH3-64 functions of one CPU kernel level (runtime/cpu/kernel_level.hpp): xxh3_level.cpp is
// compiled once per level, so XXH3 runs the widest vectors the CPU has (AVX-512, AVX2, SSE2); the
// values do not depend on them. checksum.cpp calls the level the process chose.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/runtime/cpu/kernel_level_namespace.hpp"

namespace tessera {

struct Xxh3Functions {
  std::uint64_t (*hash)(const void* data, std::size_t bytes);
  // On an XXH3_state_t (xxhash.h) that XXH3_64bits_reset started.
  void (*update)(void* state, const void* data, std::size_t bytes);
  std::uint64_t (*digest)(const void* state);
};

}  // namespace tessera

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

const Xxh3Functions& xxh3_functions();

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
