// NvmeSettings: names and validation.
#include "tessera/runtime/offload/nvme_settings.hpp"

#include "tessera/core/setting_error.hpp"

namespace tessera {

const char* offload_io_name(OffloadIo io) { return io == OffloadIo::kAuto ? "auto" : "buffered"; }

OffloadIo parse_offload_io(const std::string& text) {
  if (text == "auto") return OffloadIo::kAuto;
  if (text == "buffered") return OffloadIo::kBuffered;
  throw SettingError("offload.io", text, "use auto (io_uring with O_DIRECT where possible) or buffered");
}

void NvmeSettings::validate(std::int64_t alignment) const {
  if (block_elements < 1 || block_elements % alignment != 0) {
    throw SettingError("offload.block", std::to_string(block_elements),
                       "the streamed block must be a positive multiple of " + std::to_string(alignment) +
                           " elements (the optimizer's quantization block)");
  }
  if (buffers < 2 || buffers > 64) {
    throw SettingError("offload.buffers", std::to_string(buffers),
                       "use 2 to 64 (3 or more let reads, updates and writes of consecutive blocks overlap)");
  }
  if (queue_depth < 1 || queue_depth > 4096) {
    throw SettingError("offload.queue_depth", std::to_string(queue_depth), "use 1 to 4096");
  }
}

}  // namespace tessera
