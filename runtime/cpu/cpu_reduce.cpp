// CPU reductions for gradient clipping and overflow checks; results are written to memory the
// caller passes (device memory on every backend).
//
// The order of sum_squares: x is cut into chunks whose size depends on n only (at most kMaxChunks
// of at least kMinChunk elements, a multiple of kLanes); within a chunk the squares go, in double
// (exact for an f32), into kLanes lanes by position in the chunk (element i of the chunk into lane
// i % kLanes, the chunk's last n % kLanes elements after all others), the lanes are added in lane
// order, and the chunk sums in chunk order. So the result is the same bits for every thread count
// and every alignment of x (shards of a flat buffer start anywhere), and add_sum_squares, which
// adds its squares as it writes out, gives the bits of add() followed by sum_squares(). kLanes = 32
// is four 512-bit vectors of doubles: enough independent additions to run at memory speed. The
// chunk sums live in a fixed stack array (no allocation). add_bf16 is add_sum_squares with its
// second operand bf16, widened as it is read.
#include <cstdint>
#include <cstring>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::int64_t kMinChunk = 1 << 14;
constexpr std::int64_t kMaxChunks = 512;
constexpr std::int64_t kParallelMin = 1 << 16;
constexpr int kLanes = 32;
constexpr std::int64_t kAddBlock = 1024;  // add_sum_squares: elements added, then squared from L1
static_assert(kMinChunk % kLanes == 0 && kAddBlock % kLanes == 0);

std::int64_t chunk_size(std::int64_t n) {
  const std::int64_t chunk = (n + kMaxChunks - 1) / kMaxChunks;
  return chunk < kMinChunk ? kMinChunk : (chunk + kLanes - 1) / kLanes * kLanes;
}

// lanes[l] += x[i]^2 for every i with i % kLanes == l; n is a multiple of kLanes. The lanes are
// copied into a local array indexed by constants only, so they stay in registers.
void accumulate_squares(double (&lanes)[kLanes], const float* x, std::int64_t n) {
  double acc[kLanes];
  for (int l = 0; l < kLanes; ++l) acc[l] = lanes[l];
  for (std::int64_t i = 0; i < n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += static_cast<double>(x[i + l]) * static_cast<double>(x[i + l]);
  }
  for (int l = 0; l < kLanes; ++l) lanes[l] = acc[l];
}

// Adds the squares of the chunk's last `rest` (< kLanes) elements to lanes 0.. and the lanes in order.
double finish_lanes(double (&lanes)[kLanes], const float* tail, std::int64_t rest) {
  for (std::int64_t l = 0; l < rest && l < kLanes; ++l) {
    lanes[l] += static_cast<double>(tail[l]) * static_cast<double>(tail[l]);
  }
  double sum = 0.0;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

double chunk_sum_squares(const float* x, std::int64_t n) {
  double lanes[kLanes] = {};
  const std::int64_t body = n / kLanes * kLanes;
  accumulate_squares(lanes, x, body);
  return finish_lanes(lanes, x + body, n - body);
}

// out = a + b (b widened to f32 when bf16).
template <typename B>
void add_range(float* out, const float* a, const B* b, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + to_f32(b[i]);
}

// out = a + b over one chunk, block by block while the block is in L1, and the chunk's sum of
// squares of out in chunk_sum_squares' order.
template <typename B>
double chunk_add_sum_squares(float* out, const float* a, const B* b, std::int64_t n) {
  double lanes[kLanes] = {};
  const std::int64_t body = n / kLanes * kLanes;
  for (std::int64_t i = 0; i < body; i += kAddBlock) {
    const std::int64_t len = body - i < kAddBlock ? body - i : kAddBlock;
    add_range(out + i, a + i, b + i, len);
    accumulate_squares(lanes, out + i, len);
  }
  add_range(out + body, a + body, b + body, n - body);
  return finish_lanes(lanes, out + body, n - body);
}

// The chunk sums of `chunk_sum(begin, count)` over n, in parallel, added in chunk order.
template <class ChunkSum>
double sum_of_chunks(std::int64_t n, ChunkSum chunk_sum) {
  const std::int64_t chunk = chunk_size(n);
  const std::int64_t chunks = (n + chunk - 1) / chunk;
  double partial[kMaxChunks];
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (std::int64_t ci = 0; ci < chunks; ++ci) {
    const std::int64_t begin = ci * chunk;
    partial[ci] = chunk_sum(begin, begin + chunk < n ? chunk : n - begin);
  }
  double total = 0.0;
  for (std::int64_t ci = 0; ci < chunks; ++ci) total += partial[ci];
  return total;
}

}  // namespace

void LevelKernels::sum(const float* x, std::int64_t n, double* out) const {
  double total = 0.0;
  for (std::int64_t i = 0; i < n; ++i) total += x[i];
  *out = total;
}

void LevelKernels::sum_squares(const float* x,  // (n)
                             std::int64_t n, double* out) const {
  *out = n <= 0 ? 0.0 : sum_of_chunks(n, [x](std::int64_t begin, std::int64_t count) {
    return chunk_sum_squares(x + begin, count);
  });
}

void LevelKernels::add_sum_squares(float* out,      // (n) written; may alias a or b
                                 const float* a,  // (n)
                                 const float* b,  // (n)
                                 std::int64_t n, double* sum_squares_out) const {
  *sum_squares_out = n <= 0 ? 0.0 : sum_of_chunks(n, [out, a, b](std::int64_t begin, std::int64_t count) {
    return chunk_add_sum_squares(out + begin, a + begin, b + begin, count);
  });
}

void LevelKernels::add_bf16(float* out,      // (n) written; may alias a
                            const float* a,  // (n)
                            const Bf16* b,   // (n)
                            std::int64_t n, double* sum_squares_out) const {
  if (sum_squares_out != nullptr) {
    *sum_squares_out = n <= 0 ? 0.0 : sum_of_chunks(n, [out, a, b](std::int64_t begin, std::int64_t count) {
      return chunk_add_sum_squares(out + begin, a + begin, b + begin, count);
    });
    return;
  }
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + to_f32(b[i]);
}

void LevelKernels::has_non_finite(const float* x, std::int64_t n, std::int32_t* out) const {
  std::uint32_t found = 0;
#pragma omp parallel for simd schedule(static) reduction(| : found) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &x[i], sizeof bits);
    found |= (bits & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
  }
  *out = found != 0 ? 1 : 0;
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
