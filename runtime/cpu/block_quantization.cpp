// block_quantization: 64 codes at a time with AVX-512 VBMI byte permutes, element loops elsewhere.
//
// A 256-entry byte table is four 64-byte registers: two vpermi2b look up the low and the high half
// (index bits 0-6) and bit 7 picks between them. A float table is four such byte planes; the planes
// come out in byte order, and unpacking bytes to words to dwords interleaves 128-bit lanes, so the
// index bytes are first put in the transposed order that makes the unpacked floats come out in
// element order.
#include "tessera/runtime/cpu/block_quantization.hpp"

#include <array>

#if defined(__AVX512VBMI__) && defined(__AVX512BW__) && defined(__AVX512F__)
#define TESSERA_VECTOR_QUANTIZATION 1
#include <immintrin.h>
#endif

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

void dequantize_elements(const std::uint8_t* codes, float scale, const QuantizationTables& t, float* out,
                         std::int64_t n) {
  const QuantizationMap& map = *t.map;  // read once: for all the compiler knows, the stores alias t
  const std::uint8_t code_xor = t.code_xor;
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    out[i] = dequantize_code(static_cast<std::uint8_t>(codes[i] ^ code_xor), map) * scale;
  }
}

void quantize_elements(const float* x, float inv_scale, const QuantizationTables& t, std::uint8_t* codes,
                       std::int64_t n) {
  const QuantizationMap& map = *t.map;
  const std::uint8_t code_xor = t.code_xor;
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    codes[i] = static_cast<std::uint8_t>(quantize_code(x[i] * inv_scale, map) ^ code_xor);
  }
}

#if TESSERA_VECTOR_QUANTIZATION

constexpr std::int64_t kLanes = kQuantizationWidth;

template <class Index>
constexpr std::array<std::uint8_t, 64> byte_indices(Index index) {
  std::array<std::uint8_t, 64> a{};
  for (int p = 0; p < 64; ++p) a[static_cast<std::size_t>(p)] = static_cast<std::uint8_t>(index(p));
  return a;
}

// Position 16k + 4q + j holds element 16q + 4k + j (k: 128-bit lane, q: output register): unpacking
// byte planes in this order gives register q the floats of elements 16q .. 16q + 15 in order.
alignas(64) constexpr auto kTranspose = byte_indices([](int p) {
  return 16 * ((p >> 2) & 3) + 4 * (p >> 4) + (p & 3);
});
// The high byte of each element's top word, from the words of elements 0-31 (bytes 0-63) and
// 32-63 (bytes 64-127), in the order whose byte-to-word unpacking gives elements 0-31, then 32-63:
// position 16k + j holds element 8k + j, position 16k + 8 + j element 32 + 8k + j.
alignas(64) constexpr auto kGroupOrder = byte_indices([](int p) {
  const int element = (p & 8) ? 32 + 8 * (p >> 4) + (p & 7) : 8 * (p >> 4) + (p & 7);
  return 2 * element + 1;  // byte index across the two word registers (2 bytes per element)
});
alignas(64) constexpr auto kLowBytes = byte_indices([](int p) { return 2 * p; });  // of 64 words in two registers
alignas(64) constexpr auto kHighBytes = byte_indices([](int p) { return 2 * p + 1; });
alignas(64) constexpr auto kTopWords = [] {
  std::array<std::uint16_t, 32> a{};
  for (int i = 0; i < 32; ++i) a[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(2 * i + 1);
  return a;
}();

__m512i load(const void* p) { return _mm512_loadu_si512(p); }

// Bytes of v reordered by kTranspose. (The zero-masking form with every lane kept is the plain
// vpermb; GCC's plain intrinsic warns about the undefined source it passes.)
__m512i transposed(__m512i v) { return _mm512_maskz_permutexvar_epi8(~__mmask64{0}, load(kTranspose.data()), v); }

// A 256-entry byte table held in four registers (callers build one before a loop, so the entries
// stay in registers across it).
struct ByteTable {
  __m512i part[4];
  explicit ByteTable(const std::uint8_t* table)
      : part{load(table), load(table + 64), load(table + 128), load(table + 192)} {}
  // The entries at 64 indices; upper: the lanes whose index has bit 7 set.
  __m512i lookup(__m512i index, __mmask64 upper) const {
    const __m512i lo = _mm512_permutex2var_epi8(part[0], index, part[1]);
    const __m512i hi = _mm512_permutex2var_epi8(part[2], index, part[3]);
    return _mm512_mask_blend_epi8(upper, lo, hi);
  }
};

// A table of 256 32-bit entries as four byte tables (byte b of each entry in plane b).
struct WordTable {
  ByteTable plane[4];
  explicit WordTable(const std::array<std::array<std::uint8_t, 256>, 4>& planes)
      : plane{ByteTable(planes[0].data()), ByteTable(planes[1].data()), ByteTable(planes[2].data()),
              ByteTable(planes[3].data())} {}
  // The entries at 64 indices given in kTranspose order: out[q] holds elements 16q .. 16q + 15.
  void lookup(__m512i transposed_index, __m512 out[4]) const {
    const __mmask64 upper = _mm512_movepi8_mask(transposed_index);
    const __m512i b0 = plane[0].lookup(transposed_index, upper), b1 = plane[1].lookup(transposed_index, upper);
    const __m512i b2 = plane[2].lookup(transposed_index, upper), b3 = plane[3].lookup(transposed_index, upper);
    const __m512i lo01 = _mm512_unpacklo_epi8(b0, b1), hi01 = _mm512_unpackhi_epi8(b0, b1);
    const __m512i lo23 = _mm512_unpacklo_epi8(b2, b3), hi23 = _mm512_unpackhi_epi8(b2, b3);
    out[0] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(lo01, lo23));
    out[1] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(lo01, lo23));
    out[2] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(hi01, hi23));
    out[3] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(hi01, hi23));
  }
};

// codes (n) -> out (n), n a multiple of 64.
void dequantize_vector(const std::uint8_t* codes, float scale, const QuantizationTables& t, float* out,
                       std::int64_t n) {
  const WordTable values(t.value_bytes);
  const __m512 s = _mm512_set1_ps(scale);
  for (std::int64_t i = 0; i < n; i += kLanes) {
    __m512 v[4];
    values.lookup(transposed(load(codes + i)), v);
    for (int q = 0; q < 4; ++q) _mm512_storeu_ps(out + i + 16 * q, _mm512_mul_ps(v[q], s));
  }
}

// The 64 products x[0..63] * inv_scale: y[q] holds elements 16q .. 16q + 15.
void scaled(const float* x, __m512 inv_scale, __m512 y[4]) {
  for (int q = 0; q < 4; ++q) y[q] = _mm512_mul_ps(_mm512_loadu_ps(x + 16 * q), inv_scale);
}

// Quantizing runs in three passes over chunks, each with its tables in registers throughout: the
// cells of the elements, the cells' start codes, then the last step against the start's threshold.
constexpr std::int64_t kChunk = 1024;

// Cells of x[0..n) * inv_scale (n a multiple of 64): low byte in cell_lo, bits 8-9 in cell_hi.
void cells(const float* x, __m512 inv_scale, const QuantizationTables& t, std::uint8_t* cell_lo, std::uint8_t* cell_hi,
           std::int64_t n) {
  const ByteTable entry_lo_of(t.cell_entry_bytes[0].data()), entry_hi_of(t.cell_entry_bytes[1].data());
  const __m512i top_words = load(kTopWords.data()), group_order = load(kGroupOrder.data());
  const __m512i low_bytes = load(kLowBytes.data()), high_bytes = load(kHighBytes.data());
  const __m512i cell_mask = _mm512_set1_epi16(kMaxQuantCells - 1);
  for (std::int64_t i = 0; i < n; i += kLanes) {
    __m512 y[4];
    scaled(x + i, inv_scale, y);
    // Top 16 bits of each element: elements 0-31 and 32-63 as words.
    const __m512i k01 = _mm512_permutex2var_epi16(_mm512_castps_si512(y[0]), top_words, _mm512_castps_si512(y[1]));
    const __m512i k23 = _mm512_permutex2var_epi16(_mm512_castps_si512(y[2]), top_words, _mm512_castps_si512(y[3]));
    // The group (top byte) -> its cell entry, unpacked to words in element order.
    const __m512i group = _mm512_permutex2var_epi8(k01, group_order, k23);
    const __mmask64 negative = _mm512_movepi8_mask(group);
    const __m512i entry_lo = entry_lo_of.lookup(group, negative), entry_hi = entry_hi_of.lookup(group, negative);
    const __m512i e01 = _mm512_unpacklo_epi8(entry_lo, entry_hi), e23 = _mm512_unpackhi_epi8(entry_lo, entry_hi);
    const __m512i cell01 =
        _mm512_and_si512(_mm512_add_epi16(_mm512_srlv_epi16(k01, _mm512_srli_epi16(e01, 10)), e01), cell_mask);
    const __m512i cell23 =
        _mm512_and_si512(_mm512_add_epi16(_mm512_srlv_epi16(k23, _mm512_srli_epi16(e23, 10)), e23), cell_mask);
    _mm512_storeu_si512(cell_lo + i, _mm512_permutex2var_epi8(cell01, low_bytes, cell23));
    _mm512_storeu_si512(cell_hi + i, _mm512_permutex2var_epi8(cell01, high_bytes, cell23));
  }
}

// Start codes of n cells (n a multiple of 64).
void start_codes(const std::uint8_t* cell_lo, const std::uint8_t* cell_hi, const QuantizationTables& t,
                 std::uint8_t* start, std::int64_t n) {
  const ByteTable q0(t.cell_start.data()), q1(t.cell_start.data() + 256), q2(t.cell_start.data() + 512),
      q3(t.cell_start.data() + 768);
  const __m512i one = _mm512_set1_epi8(1), two = _mm512_set1_epi8(2);
  for (std::int64_t i = 0; i < n; i += kLanes) {
    const __m512i lo = load(cell_lo + i), hi = load(cell_hi + i);
    const __mmask64 bit7 = _mm512_movepi8_mask(lo), bit8 = _mm512_test_epi8_mask(hi, one),
                    bit9 = _mm512_test_epi8_mask(hi, two);
    const __m512i low_half = _mm512_mask_blend_epi8(bit8, q0.lookup(lo, bit7), q1.lookup(lo, bit7));
    const __m512i high_half = _mm512_mask_blend_epi8(bit8, q2.lookup(lo, bit7), q3.lookup(lo, bit7));
    _mm512_storeu_si512(start + i, _mm512_mask_blend_epi8(bit9, low_half, high_half));
  }
}

// codes (n) hold start codes; each steps up by one where its threshold is below x * inv_scale
// (ordered: NaN stays), then takes the stored form.
void last_step(const float* x, __m512 inv_scale, const QuantizationTables& t, std::uint8_t* codes, std::int64_t n) {
  const WordTable thresholds(t.threshold_bytes);
  const __m512i one = _mm512_set1_epi8(1);
  const __m512i code_xor = _mm512_set1_epi8(static_cast<char>(t.code_xor));
  for (std::int64_t i = 0; i < n; i += kLanes) {
    __m512 y[4], threshold[4];
    scaled(x + i, inv_scale, y);
    const __m512i start = load(codes + i);
    thresholds.lookup(transposed(start), threshold);
    const __mmask16 above0 = _mm512_cmp_ps_mask(threshold[0], y[0], _CMP_LT_OQ);
    const __mmask16 above1 = _mm512_cmp_ps_mask(threshold[1], y[1], _CMP_LT_OQ);
    const __mmask16 above2 = _mm512_cmp_ps_mask(threshold[2], y[2], _CMP_LT_OQ);
    const __mmask16 above3 = _mm512_cmp_ps_mask(threshold[3], y[3], _CMP_LT_OQ);
    const __mmask64 above = _mm512_kunpackd(_mm512_kunpackw(above3, above2), _mm512_kunpackw(above1, above0));
    _mm512_storeu_si512(codes + i, _mm512_xor_si512(_mm512_mask_add_epi8(start, above, start, one), code_xor));
  }
}

// x (n) -> codes (n), n a multiple of 64.
void quantize_vector(const float* x, float inv_scale, const QuantizationTables& t, std::uint8_t* codes,
                     std::int64_t n) {
  alignas(64) std::uint8_t cell_lo[kChunk], cell_hi[kChunk];
  const __m512 s = _mm512_set1_ps(inv_scale);
  for (std::int64_t at = 0; at < n; at += kChunk) {
    const std::int64_t m = n - at < kChunk ? n - at : kChunk;
    cells(x + at, s, t, cell_lo, cell_hi, m);
    start_codes(cell_lo, cell_hi, t, codes + at, m);
    last_step(x + at, s, t, codes + at, m);
  }
}

#endif  // TESSERA_VECTOR_QUANTIZATION

}  // namespace

bool vector_quantization_built() {
#if TESSERA_VECTOR_QUANTIZATION
  return true;
#else
  return false;
#endif
}

void dequantize_run(const std::uint8_t* codes, float scale, const QuantizationTables& tables, float* out,
                    std::int64_t n) {
  std::int64_t i = 0;
#if TESSERA_VECTOR_QUANTIZATION
  i = n / kLanes * kLanes;
  dequantize_vector(codes, scale, tables, out, i);
#endif
  dequantize_elements(codes + i, scale, tables, out + i, n - i);
}

void quantize_run(const float* x, float inv_scale, const QuantizationTables& tables, std::uint8_t* codes,
                  std::int64_t n) {
  std::int64_t i = 0;
#if TESSERA_VECTOR_QUANTIZATION
  i = n / kLanes * kLanes;
  quantize_vector(x, inv_scale, tables, codes, i);
#endif
  quantize_elements(x + i, inv_scale, tables, codes + i, n - i);
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
