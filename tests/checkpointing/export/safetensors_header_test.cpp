// The safetensors header checks, one found defect each: negative and wrapping shapes and offsets,
// overlapping tensors, fractional offsets, JSON of the wrong type — each refused with the file, the
// tensor and the field named; a valid header and zero-sized tensors pass.
#include "tessera/checkpointing/export/safetensors_header.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

constexpr const char* kFile = "dir/model.safetensors";

// The message of the refusal of `header` over `data_bytes` bytes of data ("" when accepted).
std::string header_refusal(const std::string& header, std::uint64_t data_bytes = 1000) {
  try {
    parse_safetensors_header(header, data_bytes, kFile);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

void expect_refused(const std::string& header, const std::vector<std::string>& words) {
  const std::string text = header_refusal(header);
  ASSERT_FALSE(text.empty()) << header << ": accepted";
  EXPECT_NE(text.find(kFile), std::string::npos) << text;
  for (const std::string& w : words) EXPECT_NE(text.find(w), std::string::npos) << "'" << w << "' in: " << text;
}

TEST(SafetensorsHeader, ValidHeaderAndZeroSizedTensorsPass) {
  const auto tensors = parse_safetensors_header(
      R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"BF16","shape":[0,5],)"
      R"("data_offsets":[24,24]},"c":{"dtype":"F16","shape":[],"data_offsets":[24,26]},"__metadata__":{"k":"v"}})",
      26, kFile);
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors.at("a").shape, (Shape{2, 3}));
  EXPECT_EQ(tensors.at("c").end, 26u);
}

TEST(SafetensorsHeader, NegativeShapesAndOffsetsAreRefused) {
  expect_refused(R"({"w":{"dtype":"F32","shape":[-1,4],"data_offsets":[0,16]}})", {"'w'", "shape[0]", "-1"});
  expect_refused(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[-16,0]}})", {"'w'", "data_offsets[0]", "-16"});
}

TEST(SafetensorsHeader, WrappingShapesAndOffsetsAreRefused) {
  // 2^62 x 4 elements wrap 64 bits; 4 bytes each of 2^62 wraps too; an end past the data.
  expect_refused(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", {"'w'", "64-bit"});
  expect_refused(R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", {"'w'", "64-bit"});
  expect_refused(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[18446744073709551600,0]}})",
                 {"'w'", "data_offsets"});
  expect_refused(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[18446744073709551600,18446744073709551616]}})",
                 {"'w'", "data_offsets[1]"});
  expect_refused(R"({"w":{"dtype":"F32","shape":[300],"data_offsets":[0,1200]}})", {"'w'", "1000 bytes of data"});
}

TEST(SafetensorsHeader, OverlappingTensorsAreRefused) {
  expect_refused(R"({"wte.weight":{"dtype":"F32","shape":[4],"data_offsets":[8,24]},)"
                 R"("wpe.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
                 {"tensor 'wte.weight': data_offsets [8, 24) overlap tensor 'wpe.weight' at [0, 16)"});
  expect_refused(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                 R"("b":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
                 {"overlap"});
}

TEST(SafetensorsHeader, FractionalOffsetsAndDimensionsAreRefused) {
  expect_refused(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0.5,16.5]}})",
                 {"'w'", "data_offsets[0]", "fraction"});
  expect_refused(R"({"w":{"dtype":"F32","shape":[4.0],"data_offsets":[0,16]}})", {"'w'", "shape[0]", "fraction"});
}

TEST(SafetensorsHeader, WrongJsonTypesNameTheField) {
  expect_refused(R"([1,2])", {"header is a JSON array"});
  expect_refused(R"({"w":7})", {"'w'", "object"});
  expect_refused(R"({"w":{"dtype":32,"shape":[4],"data_offsets":[0,16]}})", {"'w'", "dtype"});
  expect_refused(R"({"w":{"dtype":"F32","shape":"4","data_offsets":[0,16]}})", {"'w'", "shape", "string"});
  expect_refused(R"({"w":{"dtype":"F32","shape":[true],"data_offsets":[0,16]}})", {"'w'", "shape[0]"});
  expect_refused(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":{"a":0}}})", {"'w'", "data_offsets"});
  expect_refused(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16,32]}})", {"'w'", "data_offsets"});
  expect_refused(R"({"w":{"dtype":"F32","shape":[4]}})", {"'w'", "data_offsets is missing"});
  expect_refused(R"({"__metadata__":{"step":12}})", {"__metadata__", "'step'"});
  EXPECT_NE(header_refusal(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":["0","16"]}})").find("data_offsets[0]"),
            std::string::npos);
}

// Through the reader: a negative shape used to reach std::vector's "larger than max_size()".
TEST(SafetensorsHeader, TheReaderRefusesANegativeShapeBeforeAllocating) {
  testing::ScratchDir dir("safetensors_header");
  const std::string path = (dir / "neg.safetensors").string();
  std::string header = R"({"w":{"dtype":"F32","shape":[-4],"data_offsets":[0,0]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::uint64_t n = header.size();
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << std::string(16, '\0');
  }
  try {
    SafetensorsReader reader(path);
    reader.read_f32("w");
    ADD_FAILURE() << "accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": tensor 'w': shape[0]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
