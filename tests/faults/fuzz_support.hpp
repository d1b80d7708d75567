// Seeded mutation fuzzing of the readers of files that come from elsewhere. A test builds a small
// valid file, and fuzz_reader() writes `iterations` mutations of it (byte flips, truncations,
// hostile numbers and wrong JSON types in place of the file's own, ...) and hands each to the
// reader. Each read must either succeed or throw a std::exception whose message names the file;
// anything else (another exception, an unnamed error) is reported with the seed, the iteration and
// the mutation so it can be replayed. The C++ heap is metered during each read: an allocation that
// would take the live total past 64 x the file's size + 1 MiB is refused (std::bad_alloc) and
// reported, so a header that claims gigabytes fails the test instead of the machine.
//
// This header defines the replacement global operator new / delete that do the metering: include
// it from exactly one file of a test executable — each tests/faults/fuzz_*_test.cpp is one, as its
// "tessera-test-executable: own" line asks (tests/CMakeLists.txt).
#pragma once

#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/core/splitmix64.hpp"

namespace tessera::testing::fuzz {

// ---- the metered heap -------------------------------------------------------------------------
struct HeapMeter {
  std::atomic<bool> on{false};
  std::atomic<std::int64_t> live{0};     // bytes allocated since start() and not freed
  std::atomic<std::int64_t> peak{0};     // most live bytes since start()
  std::atomic<std::int64_t> limit{0};    // live bytes allowed
  std::atomic<std::int64_t> refused{0};  // the largest request refused since start() (0: none)
};
inline HeapMeter& heap_meter() {
  static HeapMeter meter;
  return meter;
}

inline void* metered_alloc(std::size_t bytes, std::size_t align) {
  HeapMeter& m = heap_meter();
  if (m.on.load(std::memory_order_relaxed)) {
    const std::int64_t want = static_cast<std::int64_t>(bytes > INT64_MAX / 2 ? INT64_MAX / 2 : bytes);
    const std::int64_t now = m.live.fetch_add(want, std::memory_order_relaxed) + want;
    if (now > m.limit.load(std::memory_order_relaxed)) {
      m.live.fetch_sub(want, std::memory_order_relaxed);
      if (want > m.refused.load()) m.refused.store(want);
      throw std::bad_alloc();
    }
    if (now > m.peak.load(std::memory_order_relaxed)) m.peak.store(now, std::memory_order_relaxed);
    m.live.fetch_sub(want, std::memory_order_relaxed);  // counted again below by the block's real size
  }
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (bytes + align - 1) / align * align)
                                              : std::malloc(bytes == 0 ? 1 : bytes);
  if (p == nullptr) throw std::bad_alloc();
  if (m.on.load(std::memory_order_relaxed)) m.live.fetch_add(static_cast<std::int64_t>(::malloc_usable_size(p)));
  return p;
}

inline void metered_free(void* p) noexcept {
  if (p == nullptr) return;
  HeapMeter& m = heap_meter();
  if (m.on.load(std::memory_order_relaxed)) m.live.fetch_sub(static_cast<std::int64_t>(::malloc_usable_size(p)));
  std::free(p);
}

// Meters the heap while alive: live bytes start at zero (frees of older blocks may take it below).
class MeteredScope {
 public:
  explicit MeteredScope(std::int64_t limit) {
    HeapMeter& m = heap_meter();
    m.live = 0;
    m.peak = 0;
    m.refused = 0;
    m.limit = limit;
    m.on = true;
  }
  ~MeteredScope() { heap_meter().on = false; }
  MeteredScope(const MeteredScope&) = delete;
  MeteredScope& operator=(const MeteredScope&) = delete;
};

// ---- mutations --------------------------------------------------------------------------------
using Rng = tessera::detail::SplitMix64;

// Numbers a hostile file puts where a size or an offset belongs.
inline const std::vector<std::string>& hostile_numbers() {
  static const std::vector<std::string> values = {"-1",
                                                  "-8",
                                                  "0",
                                                  "1",
                                                  "3",
                                                  "1.5",
                                                  "-0.5",
                                                  "2147483647",
                                                  "2147483648",
                                                  "4294967295",
                                                  "4294967296",
                                                  "9223372036854775807",
                                                  "9223372036854775808",
                                                  "18446744073709551615",
                                                  "18446744073709551616",
                                                  "1e30",
                                                  "1e400",
                                                  "-9223372036854775808",
                                                  "65535",
                                                  "65536"};
  return values;
}
// JSON values of the wrong type for any field.
inline const std::vector<std::string>& hostile_values() {
  static const std::vector<std::string> values = {"\"x\"",     "\"12\"", "null", "true",    "[]",  "{}",  "[1,2,3]",
                                                  "{\"a\":1}", "-1",     "1.5",  "[-1, 4]", "[0]", "\"\""};
  return values;
}

struct Mutated {
  std::string bytes;
  std::string what;  // how it was made, for the failure message
};

// Calls visit(i) for every index of `text` outside JSON strings (a string's quotes and escapes
// skipped); visit returns the index the scan goes on after (i itself to go on with i + 1).
template <class Visit>
void scan_outside_strings(const std::string& text, Visit visit) {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else {
      i = visit(i);
    }
  }
}

// [begin, end) of every JSON number in `text` (a maximal run of -+.0-9eE starting with - or a digit
// outside strings).
inline std::vector<std::pair<std::size_t, std::size_t>> json_numbers(const std::string& text) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  scan_outside_strings(text, [&](std::size_t i) {
    const char c = text[i];
    if (c != '-' && (c < '0' || c > '9')) return i;
    std::size_t j = i + 1;
    while (j < text.size() && std::string("-+.0123456789eE").find(text[j]) != std::string::npos) ++j;
    out.emplace_back(i, j);
    return j - 1;
  });
  return out;
}

// [begin, end) of every value after a ':' that is a scalar or a flat array (no nested brackets).
inline std::vector<std::pair<std::size_t, std::size_t>> json_values(const std::string& text) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  scan_outside_strings(text, [&](std::size_t i) {
    if (text[i] != ':') return i;
    std::size_t b = i + 1;
    while (b < text.size() && text[b] == ' ') ++b;
    if (b >= text.size() || text[b] == '{') return i;
    std::size_t e = b;
    if (text[b] == '[') {
      e = text.find(']', b);
      if (e == std::string::npos || text.find('[', b + 1) < e) return i;
      ++e;
    } else if (text[b] == '"') {
      e = b + 1;
      while (e < text.size() && text[e] != '"') e += text[e] == '\\' ? 2 : 1;
      e = std::min(e + 1, text.size());
    } else {
      while (e < text.size() && text[e] != ',' && text[e] != '}' && text[e] != ']') ++e;
    }
    out.emplace_back(b, e);
    return i;
  });
  return out;
}

inline std::string replace(const std::string& s, std::size_t b, std::size_t e, const std::string& with) {
  return s.substr(0, b) + with + s.substr(e);
}

// One mutation of raw bytes: flips, overwrites, truncation, a removed or repeated block.
inline Mutated mutate_bytes(const std::string& in, Rng& rng) {
  std::string s = in;
  if (s.empty()) return {"x", "one byte"};
  const std::size_t at = rng.below(s.size());
  switch (rng.below(6)) {
    case 0: s[at] = static_cast<char>(s[at] ^ (1 << rng.below(8))); return {s, "bit flip at " + std::to_string(at)};
    case 1: s[at] = static_cast<char>(rng.below(256)); return {s, "byte set at " + std::to_string(at)};
    case 2: s.resize(at); return {s, "truncated to " + std::to_string(at)};
    case 3: {
      const std::size_t n = std::min<std::size_t>(s.size() - at, 1 + rng.below(16));
      return {s.erase(at, n), "removed " + std::to_string(n) + " at " + std::to_string(at)};
    }
    case 4: {
      const std::size_t n = std::min<std::size_t>(s.size() - at, 1 + rng.below(64));
      return {s.insert(at, s.substr(at, n)), "repeated " + std::to_string(n) + " at " + std::to_string(at)};
    }
    default: {
      for (int k = 0; k < 8; ++k) s[rng.below(s.size())] = static_cast<char>(rng.below(256));
      return {s, "8 random bytes"};
    }
  }
}

// One mutation of JSON text: a number made hostile, a value of the wrong type, or raw bytes.
inline Mutated mutate_json(const std::string& text, Rng& rng) {
  const std::uint64_t kind = rng.below(10);
  if (kind < 4) {
    const auto numbers = json_numbers(text);
    if (!numbers.empty()) {
      const auto [b, e] = numbers[rng.below(numbers.size())];
      const std::string& with = hostile_numbers()[rng.below(hostile_numbers().size())];
      return {replace(text, b, e, with), "number " + text.substr(b, e - b) + " -> " + with};
    }
  } else if (kind < 7) {
    const auto values = json_values(text);
    if (!values.empty()) {
      const auto [b, e] = values[rng.below(values.size())];
      const std::string& with = hostile_values()[rng.below(hostile_values().size())];
      return {replace(text, b, e, with), "value " + text.substr(b, e - b) + " -> " + with};
    }
  } else if (kind < 8) {
    const auto numbers = json_numbers(text);
    if (numbers.size() >= 2) {  // one of the file's own numbers in another's place (sizes, offsets)
      const auto [b, e] = numbers[rng.below(numbers.size())];
      const auto [b2, e2] = numbers[rng.below(numbers.size())];
      return {replace(text, b, e, text.substr(b2, e2 - b2)),
              "number " + text.substr(b, e - b) + " -> " + text.substr(b2, e2 - b2)};
    }
  }
  return mutate_bytes(text, rng);
}

// One to three mutate_json steps on top of each other (an offset and a shape changed together
// pass checks that one change alone does not).
inline Mutated mutate_json_stacked(const std::string& text, Rng& rng) {
  Mutated m{text, ""};
  const std::uint64_t steps = 1 + rng.below(3);
  for (std::uint64_t k = 0; k < steps; ++k) {
    Mutated next = mutate_json(m.bytes, rng);
    m.bytes = std::move(next.bytes);
    m.what += (k == 0 ? "" : "; ") + next.what;
  }
  return m;
}

// ---- the loop ---------------------------------------------------------------------------------
// Removed first and written anew: truncating a file that has data makes ext4 flush it on close
// (auto_da_alloc), which would make each iteration wait for the disk.
inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Thrown by a test's own check of a file the reader accepted (the check failed: the reader should
// have refused the file).
struct AcceptedBadFile : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct FuzzCounts {
  int accepted = 0;
  int refused = 0;
  int failures = 0;
};

// For `iterations` mutations: write `make(rng)` to `path`, run `read()` under the metered heap, and
// check the outcome (see the top of the file). `named`: texts of which every error message must
// contain one (the file's name). Reports at most a few failures in full.
inline FuzzCounts fuzz_reader(const std::string& label, const std::filesystem::path& path, std::uint64_t seed,
                              int iterations, const std::function<Mutated(Rng&)>& make,
                              const std::function<void()>& read, const std::vector<std::string>& named) {
  FuzzCounts counts;
  Rng rng(seed);
  for (int i = 0; i < iterations; ++i) {
    const Mutated m = make(rng);
    write_file(path, m.bytes);
    const std::int64_t limit = 64 * static_cast<std::int64_t>(m.bytes.size()) + (1 << 20);
    std::string problem;
    std::int64_t refused = 0, peak = 0;
    {
      MeteredScope scope(limit);
      try {
        read();
        ++counts.accepted;
      } catch (const AcceptedBadFile& e) {
        problem = std::string("the reader accepted it, but ") + e.what();
      } catch (const std::bad_alloc&) {
        problem = "std::bad_alloc";
      } catch (const std::exception& e) {
        ++counts.refused;
        const std::string text = e.what();
        if (std::none_of(named.begin(), named.end(),
                         [&](const std::string& n) { return text.find(n) != std::string::npos; })) {
          problem = "an error that does not name " + named.front() + ": " + text;
        }
      } catch (...) {
        problem = "an exception that is not a std::exception";
      }
      refused = heap_meter().refused;
      peak = heap_meter().peak;
    }
    if (refused > 0) {
      problem += (problem.empty() ? "" : "; ") + std::string("asked for ") + std::to_string(refused) +
                 " bytes at once, past the bound of " + std::to_string(limit) + " for a file of " +
                 std::to_string(m.bytes.size()) + " bytes";
    }
    if (problem.empty()) continue;
    if (++counts.failures <= 5) {
      ADD_FAILURE() << label << " seed " << seed << " iteration " << i << " (" << m.what << ", " << m.bytes.size()
                    << " bytes, peak heap " << peak << "): " << problem;
    }
  }
  if (counts.failures > 5) ADD_FAILURE() << label << ": " << counts.failures << " failing mutations in all";
  return counts;
}

}  // namespace tessera::testing::fuzz

// The metered global heap of this executable.
void* operator new(std::size_t n) { return tessera::testing::fuzz::metered_alloc(n, 0); }
void* operator new[](std::size_t n) { return tessera::testing::fuzz::metered_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return tessera::testing::fuzz::metered_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return tessera::testing::fuzz::metered_alloc(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return tessera::testing::fuzz::metered_alloc(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return tessera::testing::fuzz::metered_alloc(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { tessera::testing::fuzz::metered_free(p); }
void operator delete[](void* p) noexcept { tessera::testing::fuzz::metered_free(p); }
void operator delete(void* p, std::size_t) noexcept { tessera::testing::fuzz::metered_free(p); }
void operator delete[](void* p, std::size_t) noexcept { tessera::testing::fuzz::metered_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { tessera::testing::fuzz::metered_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { tessera::testing::fuzz::metered_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { tessera::testing::fuzz::metered_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { tessera::testing::fuzz::metered_free(p); }
