// safetensors files from elsewhere, mutated: a small valid file of three tensors (F32, BF16, F16) and
// metadata, its header's numbers made hostile (negative, fractional, wrapping, another tensor's
// offsets; up to three at once; a tensor moved onto another), its values of the wrong JSON type, its bytes flipped, cut
// and repeated. The reader and read_f32 of every tensor it lists either succeed — and then every dimension is
// non-negative and the tensors lie inside the data, apart — or refuse naming the file; never crash, and never allocate
// more than 64 x the file's size + 1 MiB. tessera-test-timeout: 60
// tessera-test-executable: own (it replaces the global operator new: faults/fuzz_support.hpp)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "tessera/checkpointing/export/safetensors_file.hpp"
#include "tests/faults/fuzz_support.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing::fuzz {
namespace {

std::string valid_safetensors(const std::filesystem::path& path) {
  std::vector<SafetensorsTensor> tensors = {{"wte.weight", DType::kF32, {11, 8}, 0, 0},
                                            {"wpe.weight", DType::kBF16, {4, 8}, 0, 0},
                                            {"ln_f.bias", DType::kF16, {8}, 0, 0}};
  SafetensorsWriter writer(path, tensors, {{"format", "pt"}, {"tessera_step", "12"}});
  for (const SafetensorsTensor& t : tensors) {
    std::vector<float> values(static_cast<std::size_t>(shape_numel(t.shape)));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i);
    writer.write_next(values);
  }
  writer.finish();
  return read_file(path);
}

// The header's JSON mutated, the 8-byte length made to fit it again, the data kept.
Mutated mutate_header(const std::string& file, Rng& rng) {
  std::uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  Mutated m = mutate_json_stacked(file.substr(8, n), rng);
  const std::uint64_t len = m.bytes.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &len, 8);
  return {out + m.bytes + file.substr(8 + n), "header " + m.what};
}

// What a file the reader accepts must satisfy.
void check_accepted(const SafetensorsReader& reader, std::uint64_t file_bytes) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (const auto& [name, t] : reader.tensors()) {
    for (const std::int64_t d : t.shape) {
      if (d < 0) throw AcceptedBadFile("tensor " + name + " has shape " + shape_string(t.shape));
    }
    if (t.end < t.begin || t.end > file_bytes) throw AcceptedBadFile("tensor " + name + " lies outside the file");
    if (t.end > t.begin) spans.emplace_back(t.begin, t.end);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first < spans[i - 1].second) throw AcceptedBadFile("two of its tensors overlap");
  }
}

// One tensor's data_offsets [b, e) moved to start at another's begin (or 1 byte off it), its length
// kept: a header that is consistent in everything but the overlap.
Mutated move_offsets(const std::string& file, Rng& rng) {
  std::uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  std::string header = file.substr(8, n);
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // the text "b,e" of each data_offsets
  for (std::size_t at = header.find("\"data_offsets\":["); at != std::string::npos;
       at = header.find("\"data_offsets\":[", at + 1)) {
    const std::size_t b = at + 16;
    spans.emplace_back(b, header.find(']', b));
  }
  const auto parse = [&](std::pair<std::size_t, std::size_t> span, std::uint64_t* begin, std::uint64_t* end) {
    const std::string text = header.substr(span.first, span.second - span.first);
    *begin = std::stoull(text.substr(0, text.find(',')));
    *end = std::stoull(text.substr(text.find(',') + 1));
  };
  const auto moved = spans[rng.below(spans.size())], onto = spans[rng.below(spans.size())];
  std::uint64_t b = 0, e = 0, ob = 0, oe = 0;
  parse(moved, &b, &e);
  parse(onto, &ob, &oe);
  const std::uint64_t start = ob + rng.below(2);
  header = header.substr(0, moved.first) + std::to_string(start) + "," + std::to_string(start + (e - b)) +
           header.substr(moved.second);
  const std::uint64_t len = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &len, 8);
  return {out + header + file.substr(8 + n),
          "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + ") moved to " + std::to_string(start)};
}

TEST(FuzzSafetensors, MutatedFilesAreReadOrRefusedNamingTheFile) {
  ScratchDir dir("fuzz_safetensors");
  const std::filesystem::path path = dir / "model.safetensors";
  const std::string valid = valid_safetensors(path);
  const FuzzCounts counts = fuzz_reader(
      "safetensors", path, 0x5afe7e55, 3000,
      [&](Rng& rng) {
        const std::uint64_t kind = rng.below(8);
        return kind < 2 ? mutate_bytes(valid, rng) : kind < 3 ? move_offsets(valid, rng) : mutate_header(valid, rng);
      },
      [&] {
        SafetensorsReader reader(path);
        check_accepted(reader, std::filesystem::file_size(path));
        for (const auto& [name, t] : reader.tensors()) reader.read_f32(name);
      },
      {path.string()});
  EXPECT_GT(counts.accepted, 0) << "some mutations (metadata, values) leave a readable file";
  EXPECT_GT(counts.refused, 1000);
}

}  // namespace
}  // namespace tessera::testing::fuzz
