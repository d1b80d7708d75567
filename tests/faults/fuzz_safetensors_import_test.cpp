// A safetensors export from elsewhere, mutated and imported: config.json's fields made hostile (a
// large model beside a small file, fractions, negative sizes, wrong JSON types) and its bytes
// mutated; model.safetensors's header and bytes mutated. Opening the source and importing it into
// the model it describes either succeeds or refuses naming the file (config.json or
// model.safetensors); no crash, no model larger than the file can hold, and no allocation past
// 64 x the mutated file's size + 1 MiB.
// tessera-test-timeout: 60
// tessera-test-executable: own (it replaces the global operator new: faults/fuzz_support.hpp)
#include <gtest/gtest.h>

#include <cstring>

#include "tests/faults/fuzz_export_import_support.hpp"
#include "tests/faults/fuzz_support.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing::fuzz {
namespace {

TEST(FuzzSafetensorsImport, MutatedConfigJsonIsImportedOrRefusedNamingTheFile) {
  ScratchDir dir("fuzz_safetensors_import");
  const std::filesystem::path st = write_tiny_safetensors_export(dir.path());
  ASSERT_NO_THROW(open_and_import(st));
  const std::filesystem::path config = dir / "config.json";
  const std::string valid = read_file(config);
  const FuzzCounts counts = fuzz_reader(
      "config.json", config, 0xc0f1, 1000, [&](Rng& rng) { return mutate_json_stacked(valid, rng); },
      [&] { open_and_import(st); }, {dir.path().string()});
  EXPECT_GT(counts.accepted, 0);
  EXPECT_GT(counts.refused, 100);
}

TEST(FuzzSafetensorsImport, MutatedModelFileIsImportedOrRefusedNamingTheFile) {
  ScratchDir dir("fuzz_safetensors_import");
  const std::filesystem::path st = write_tiny_safetensors_export(dir.path());
  const std::string valid = read_file(st);
  std::uint64_t n = 0;
  std::memcpy(&n, valid.data(), 8);
  const FuzzCounts counts = fuzz_reader(
      "model.safetensors", st, 0x5afe, 1000,
      [&](Rng& rng) {
        if (rng.below(4) == 0) return mutate_bytes(valid, rng);
        Mutated m = mutate_json_stacked(valid.substr(8, n), rng);  // the header, its length fitted again
        const std::uint64_t len = m.bytes.size();
        std::string out(8, '\0');
        std::memcpy(out.data(), &len, 8);
        return Mutated{out + m.bytes + valid.substr(8 + n), "header " + m.what};
      },
      [&] { open_and_import(st); }, {st.string()});
  EXPECT_GT(counts.accepted, 0);
  EXPECT_GT(counts.refused, 100);
}

}  // namespace
}  // namespace tessera::testing::fuzz
