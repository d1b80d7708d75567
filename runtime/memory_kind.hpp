// MemoryKind: which memory of a Device an allocation comes from.
//   kDevice      the device's own memory (host memory on the CPU device, GPU memory on CUDA)
//   kPinnedHost  page-locked host memory the device copies to and from asynchronously (the staging
//                tier of CPU offload); on the CPU device ordinary 64-byte-aligned host memory
//   kNvme        bytes in offload files (NVMe offload): booked by the NvmeStore, never allocated
//                through a Device
// A Device keeps one MemoryTracker per kind, so bytes moved off the device into pinned host memory
// leave the device's figures and show up in their own tier.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace tessera {

enum class MemoryKind : std::uint8_t { kDevice, kPinnedHost, kNvme };

inline constexpr std::size_t kMemoryKindCount = 3;
inline constexpr std::array<MemoryKind, kMemoryKindCount> kAllMemoryKinds = {
    MemoryKind::kDevice, MemoryKind::kPinnedHost, MemoryKind::kNvme};

constexpr const char* memory_kind_name(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kDevice: return "device";
    case MemoryKind::kPinnedHost: return "pinned host";
    case MemoryKind::kNvme: return "nvme";
  }
  return "unknown";
}

}  // namespace tessera
