// The meta device: the same small GPT trained one step (forward, loss, backward) on the CPU device
// and on the meta device allocates exactly the same bytes, category by category, current and peak;
// the meta device holds no memory at all, so huge shapes cost nothing.
#include "tessera/runtime/meta/meta_device.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/optim/grad_clip.hpp"
#include "tessera/runtime/cpu/cpu_device.hpp"

namespace tessera {
namespace {

GptConfig small_gpt() { return {/*vocab*/ 64, /*seq*/ 16, /*layers*/ 2, /*heads*/ 2, /*dim*/ 16}; }

// One training forward + CrossEntropyLoss + backward of a fresh model on `device`; returns the
// tracker's snapshot at the end (peaks over the whole step).
MemorySnapshot train_step_memory(Device& device) {
  const GptConfig config = small_gpt();
  Gpt model(config);
  materialize_parameters(model, device, 7);
  allocate_gradients(model, device);
  const std::int64_t b = 2, t = config.max_seq_len;
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(b * t));
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((i * 7) % 64);
  const Tensor inputs = Tensor::from_host_i32(device, tokens, {b, t}, MemoryCategory::kWorkspace);
  const Tensor targets = Tensor::from_host_i32(device, tokens, {b, t}, MemoryCategory::kWorkspace);
  Context ctx(device);
  {
    CrossEntropyLoss loss;
    Tensor logits = model.forward(ctx, inputs);
    loss.forward(ctx, logits, targets);
    logits = Tensor();
    model.backward(ctx, loss.backward(ctx, 1.0f));
  }
  clip_grad_norm(device, model.parameters(), 1.0f);
  device.synchronize();
  return device.memory().snapshot();
}

TEST(MetaDevice, TracksTheSameBytesAsTheCpuDevice) {
  CpuDevice cpu;
  MetaDevice meta;
  const MemorySnapshot expected = train_step_memory(cpu);
  const MemorySnapshot actual = train_step_memory(meta);
  for (MemoryCategory c : kAllMemoryCategories) {
    EXPECT_EQ(actual.current_of(c), expected.current_of(c))
        << memory_category_name(c) << " current bytes: cpu (expected) vs meta (actual)";
    EXPECT_EQ(actual.peak_of(c), expected.peak_of(c))
        << memory_category_name(c) << " peak bytes: cpu (expected) vs meta (actual)";
  }
  EXPECT_EQ(actual.current_total, expected.current_total) << "total current bytes";
  EXPECT_EQ(actual.peak_total, expected.peak_total) << "total peak bytes";
  EXPECT_GT(expected.peak_of(MemoryCategory::kActivations), 0) << "the step allocated activations";
  EXPECT_EQ(meta.memory(MemoryKind::kPinnedHost).peak_total(), 0);
}

TEST(MetaDevice, HoldsNoMemoryAndIsInstantForHugeShapes) {
  MetaDevice meta;
  EXPECT_EQ(meta.kind(), DeviceKind::kMeta);
  EXPECT_EQ(meta.memory_space(), MemorySpace::kMeta);
  EXPECT_FALSE(meta.holds_data());
  const auto start = std::chrono::steady_clock::now();
  {
    // 8 x 4096 x 4096 f32: 512 MiB on a real device.
    Tensor huge = Tensor::zeros(meta, {8, 4096, 4096}, DType::kF32, MemoryCategory::kActivations);
    Tensor pinned = Tensor::empty(meta, {1 << 20}, DType::kF32, MemoryCategory::kCommBuffers, MemoryKind::kPinnedHost);
    EXPECT_EQ(huge.data(), nullptr);
    EXPECT_EQ(huge.view(4096, {4096}).data(), nullptr) << "views of no memory are null too";
    EXPECT_EQ(pinned.data(), nullptr);
    EXPECT_EQ(meta.memory().current(MemoryCategory::kActivations), std::int64_t{8} * 4096 * 4096 * 4);
    EXPECT_EQ(meta.memory(MemoryKind::kPinnedHost).current(MemoryCategory::kCommBuffers), std::int64_t{4} << 20);
    meta.kernels().gelu_forward(huge.data_as<float>(), huge.data_as<float>(), huge.numel());  // does nothing
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 0.1) << "allocating, zeroing and running a kernel on a 512 MiB meta tensor";
  EXPECT_EQ(meta.memory().current_total(), 0);
  EXPECT_EQ(meta.memory().peak_total(), std::int64_t{8} * 4096 * 4096 * 4);
}

TEST(MetaDevice, CopiesAndReductionsLeaveHostBuffersAsTheyWere) {
  MetaDevice meta;
  const std::vector<float> values = {1.0f, 2.0f, 3.0f};
  Tensor t = Tensor::from_host(meta, values, {3}, DType::kF32, MemoryCategory::kWorkspace);
  EXPECT_EQ(t.to_host_f32(), std::vector<float>(3, 0.0f)) << "to_host_f32 of a meta tensor gives zeros";
  std::vector<float> host = {5.0f, 6.0f, 7.0f};
  meta.copy_to_host_async(host.data(), t.data(), t.nbytes(), meta.stream(StreamRole::kCopy));
  meta.copy_to_host(host.data(), t.data(), t.nbytes());
  EXPECT_EQ(host, (std::vector<float>{5.0f, 6.0f, 7.0f})) << "copies to the host leave the buffer as it was";
  double sum = -1.0;
  std::int32_t flag = -1;
  meta.kernels().sum_squares(t.data_as<float>(), 3, &sum);
  meta.kernels().has_non_finite(t.data_as<float>(), 3, &flag);
  EXPECT_EQ(sum, -1.0) << "reductions write nothing";
  EXPECT_EQ(flag, -1) << "reductions write nothing";
  for (StreamRole role : {StreamRole::kCompute, StreamRole::kCommunication, StreamRole::kCopy}) {
    int ran = 0;
    meta.stream(role).launch_host_function([&] { ++ran; });
    EXPECT_EQ(ran, 1) << stream_role_name(role) << ": host functions run inline";
    EXPECT_TRUE(meta.stream(role).record().query()) << stream_role_name(role);
  }
  EXPECT_EQ(meta.pending_free_bytes(), 0u);
}

}  // namespace
}  // namespace tessera
