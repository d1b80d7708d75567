// XXH64 from libxxhash's header, compiled here (XXH_INLINE_ALL); XXH3-64 through the functions of
// the CPU kernel level the process runs (xxh3_level.hpp: AVX-512, AVX2 or SSE2 vectors); the values
// do not depend on the instructions.
#include "tessera/checkpointing/format/checksum.hpp"

// GCC 12 warns that AVX-512's _mm512_undefined_epi32() is uninitialized, where XXH3 inlines it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define XXH_INLINE_ALL
#include <xxhash.h>
#pragma GCC diagnostic pop

#include "tessera/checkpointing/format/xxh3_level.hpp"
#include "tessera/runtime/cpu/kernel_level.hpp"

namespace tessera {

// Each level's functions, defined by that level's copy of xxh3_level.cpp.
namespace cpu_portable {
const Xxh3Functions& xxh3_functions();
}  // namespace cpu_portable
#if defined(TESSERA_CPU_X86_LEVELS)
namespace cpu_avx2 {
const Xxh3Functions& xxh3_functions();
}  // namespace cpu_avx2
namespace cpu_avx512 {
const Xxh3Functions& xxh3_functions();
}  // namespace cpu_avx512
#endif

namespace {

const Xxh3Functions& level_xxh3_functions(CpuKernelLevel level) {
  switch (level) {
#if defined(TESSERA_CPU_X86_LEVELS)
    case CpuKernelLevel::kAvx512: return cpu_avx512::xxh3_functions();
    case CpuKernelLevel::kAvx2: return cpu_avx2::xxh3_functions();
#endif
    default: return cpu_portable::xxh3_functions();
  }
}

// Chosen once, as the kernels are.
const Xxh3Functions& xxh3() {
  static const Xxh3Functions& functions = level_xxh3_functions(cpu_kernel_level());
  return functions;
}

}  // namespace

std::uint64_t xxh64(const void* data, std::size_t bytes, std::uint64_t seed) {
  return static_cast<std::uint64_t>(XXH64(data, bytes, static_cast<XXH64_hash_t>(seed)));
}

std::uint64_t xxh3_64(const void* data, std::size_t bytes) { return xxh3().hash(data, bytes); }

std::uint64_t chunk_checksum(ChunkChecksum kind, const void* data, std::size_t bytes) {
  return kind == ChunkChecksum::kXxh3_64 ? xxh3_64(data, bytes) : xxh64(data, bytes);
}

struct ChunkHasher::State {
  XXH64_state_t xxh64;
  XXH3_state_t xxh3;  // 64-byte aligned (XXH_ALIGN_MEMBER), as `new` of State keeps it
};

ChunkHasher::ChunkHasher() : state_(std::make_unique<State>()) { XXH3_INITSTATE(&state_->xxh3); }
ChunkHasher::~ChunkHasher() = default;

void ChunkHasher::reset(ChunkChecksum kind) {
  kind_ = kind;
  if (kind == ChunkChecksum::kXxh3_64) {
    XXH3_64bits_reset(&state_->xxh3);
  } else {
    XXH64_reset(&state_->xxh64, 0);
  }
}

void ChunkHasher::update(const void* data, std::size_t bytes) {
  if (kind_ == ChunkChecksum::kXxh3_64) {
    xxh3().update(&state_->xxh3, data, bytes);
  } else {
    XXH64_update(&state_->xxh64, data, bytes);
  }
}

std::uint64_t ChunkHasher::digest() const {
  return kind_ == ChunkChecksum::kXxh3_64 ? xxh3().digest(&state_->xxh3) : XXH64_digest(&state_->xxh64);
}

const char* chunk_checksum_name(ChunkChecksum kind) { return kind == ChunkChecksum::kXxh3_64 ? "xxh3_64" : "xxh64"; }

std::optional<ChunkChecksum> parse_chunk_checksum(std::string_view name) {
  if (name == "xxh64") return ChunkChecksum::kXxh64;
  if (name == "xxh3_64") return ChunkChecksum::kXxh3_64;
  return std::nullopt;
}

std::string checksum_table_name(const std::string& dataset, ChunkChecksum kind) {
  return dataset + "_" + chunk_checksum_name(kind);
}

}  // namespace tessera
