// TFRecord framing: CRC32C's check value, and a framed record byte for byte as TensorBoard's own
// record writer frames it (the bytes below were written by tensorboard's Python writer for
// b"hello tensorboard": length, masked CRC of the length, data, masked CRC of the data).
#include "tessera/training/tfrecord.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tessera {
namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

TEST(TfRecord, Crc32cCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u) << "CRC32C (Castagnoli)'s published check value";
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(TfRecord, MaskRotatesAndAddsTheConstant) {
  const std::uint32_t crc = crc32c("123456789");
  EXPECT_EQ(masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(TfRecord, FramesAsTensorBoardsWriterDoes) {
  EXPECT_EQ(hex(tfrecord_frame("hello tensorboard")),
            "1100000000000000"  // length 17, little-endian
            "9d6db52e"          // masked CRC32C of the length
            "68656c6c6f2074656e736f72626f617264"
            "a46f74d8");  // masked CRC32C of the data
  EXPECT_EQ(tfrecord_frame("").size(), 16u);
}

}  // namespace
}  // namespace tessera
