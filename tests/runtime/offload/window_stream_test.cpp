// stream_windows: a pass over resident and filed tensors sees every window's values in order,
// with windows that do not divide the range, per-block values and 2 to 5 buffer sets; what the
// work writes to filed tensors is in the file afterwards, and read-only tensors are not written.
// Without a store the whole range is one window on the resident memory.
#include "tessera/runtime/offload/window_stream.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "tessera/runtime/device.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

TEST(WindowStream, UpdatesFiledAndResidentTensorsWindowByWindow) {
  testing::ScratchDir dir("window_stream");
  auto device = make_cpu_device();
  for (int buffers : {2, 3, 5}) {
    NvmeSettings settings;
    settings.path = dir.path().string();
    settings.block_elements = 512;
    settings.buffers = buffers;
    NvmeStore store(*device, settings, 0);
    const std::int64_t n = 512 * 7 + 256;  // the last window is half a block
    FileExtent x = store.reserve(n, DType::kF32, 1, MemoryCategory::kOptimizerState);
    FileExtent scale = store.reserve(n / 256, DType::kF32, 256, MemoryCategory::kOptimizerState);
    store.allocate_file();
    std::vector<float> xs(static_cast<std::size_t>(n)), scales(static_cast<std::size_t>(n / 256), 2.0f);
    std::iota(xs.begin(), xs.end(), 0.0f);
    store.write(x, 0, n, xs.data());
    store.write(scale, 0, n / 256, scales.data());
    std::vector<float> grads(static_cast<std::size_t>(n), 1.0f), out(static_cast<std::size_t>(n), 0.0f);

    StreamSlot slots[4];
    slots[0].filed = &x;
    slots[1].filed = &scale;
    slots[1].elements_per_value = 256;
    slots[1].save = false;  // read only
    slots[2].resident = reinterpret_cast<std::byte*>(grads.data());
    slots[2].save = false;
    slots[3].resident = reinterpret_cast<std::byte*>(out.data());
    slots[3].load = false;
    std::int64_t seen = 0;
    stream_windows(&store, slots, n, [&](std::int64_t begin, std::int64_t count, std::span<std::byte* const> data) {
      EXPECT_EQ(begin, seen);
      seen += count;
      auto* xv = reinterpret_cast<float*>(data[0]);
      auto* sv = reinterpret_cast<float*>(data[1]);
      const auto* g = reinterpret_cast<const float*>(data[2]);
      auto* o = reinterpret_cast<float*>(data[3]);
      for (std::int64_t i = 0; i < count; ++i) {
        ASSERT_EQ(xv[i], static_cast<float>(begin + i)) << "window at " << begin;
        xv[i] = xv[i] * sv[i / 256] + g[i];
        o[i] = xv[i];
      }
      sv[0] = -1.0f;  // not saved
    });
    EXPECT_EQ(seen, n);
    std::vector<float> back(static_cast<std::size_t>(n)), scale_back(scales.size());
    store.read(x, 0, n, back.data());
    store.read(scale, 0, n / 256, scale_back.data());
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_EQ(back[static_cast<std::size_t>(i)], 2.0f * static_cast<float>(i) + 1.0f) << i;
    EXPECT_EQ(out, back);
    EXPECT_EQ(scale_back, scales) << "a read-only tensor was written";
    EXPECT_GE(store.stats().bytes_written, n * 4);
  }
}

TEST(WindowStream, WithoutAStoreTheRangeIsOneWindow) {
  std::vector<float> v(1000, 1.0f);
  StreamSlot slot;
  slot.resident = reinterpret_cast<std::byte*>(v.data());
  int calls = 0;
  stream_windows(nullptr, std::span(&slot, 1), 1000,
                 [&](std::int64_t begin, std::int64_t count, std::span<std::byte* const> data) {
                   ++calls;
                   EXPECT_EQ(begin, 0);
                   EXPECT_EQ(count, 1000);
                   EXPECT_EQ(data[0], reinterpret_cast<std::byte*>(v.data()));
                 });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace tessera
