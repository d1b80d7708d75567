// TFRecord framing with Boost.CRC's CRC32C.
#include "tessera/training/tfrecord.hpp"

#include <boost/crc.hpp>

namespace tessera {
namespace {

// CRC32C: polynomial 0x1EDC6F41, reflected in and out, initial value and final xor all ones.
using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

void put_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

}  // namespace

std::uint32_t crc32c(std::string_view data) {
  Crc32c crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

std::uint32_t masked_crc32c(std::string_view data) {
  const std::uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord_frame(std::string_view data) {
  std::string header;
  put_le(header, data.size(), 8);
  std::string out = header;
  put_le(out, masked_crc32c(header), 4);
  out.append(data);
  put_le(out, masked_crc32c(data), 4);
  return out;
}

}  // namespace tessera
