// TFRecord framing, the container of TensorBoard's event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of data
// where the mask is ((crc >> 15) | (crc << 17)) + 0xa282ead8 (mod 2^32), so a CRC of data that holds
// CRCs stays well distributed. CRC32C (Castagnoli, reflected, init and final xor 0xffffffff) comes from
// Boost.CRC.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

// CRC32C of `data` ("123456789" -> 0xe3069283).
std::uint32_t crc32c(std::string_view data);
// TFRecord's masked CRC32C of `data`.
std::uint32_t masked_crc32c(std::string_view data);
// `data` framed as one record.
std::string tfrecord_frame(std::string_view data);

}  // namespace tessera
