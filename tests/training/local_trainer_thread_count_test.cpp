// Training gives the same bits at 1, 2 and 3 threads: a small GPT trained for a few steps at each
// thread count (set as programs set it, set_cpu_threads) ends with bit-identical losses, gradient
// norms and parameters. The model's products are large enough for every kernel's parallel path,
// and the GEMMs' inner dimensions (B*T = 333 rows, V = 331) span more than one of OpenBLAS's blocks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/training/local_trainer.hpp"

namespace tessera {
namespace {

constexpr std::int64_t kBatch = 3, kSeq = 111, kVocab = 331;
constexpr int kSteps = 4;

GptConfig small_config() {
  GptConfig c;
  c.vocab_size = kVocab;
  c.max_seq_len = kSeq;
  c.layers = 2;
  c.heads = 3;
  c.channels = 48;
  return c;
}

MicroBatch random_batch(Device& device, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::int32_t> in, tg;
  for (std::int64_t r = 0; r < kBatch; ++r) {
    std::vector<std::int32_t> seq(static_cast<std::size_t>(kSeq + 1));
    for (auto& x : seq) x = static_cast<std::int32_t>(rng.below(kVocab));
    in.insert(in.end(), seq.begin(), seq.end() - 1);
    tg.insert(tg.end(), seq.begin() + 1, seq.end());
  }
  return {Tensor::from_host_i32(device, in, {kBatch, kSeq}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {kBatch, kSeq}, MemoryCategory::kWorkspace)};
}

struct TrainedRun {
  std::vector<float> losses;
  std::vector<double> grad_norms;
  std::vector<std::pair<std::string, std::vector<float>>> parameters;  // (full name, values)
};

TrainedRun train(int threads) {
  set_cpu_threads(threads);
  auto device = make_cpu_device();
  Gpt model(small_config());
  materialize_parameters(model, *device, 11);
  LocalTrainer trainer(model, *device, AdamWConfig{}, 1.0f);
  TrainedRun run;
  for (int s = 0; s < kSteps; ++s) {
    const StepResult step = trainer.step({random_batch(*device, 100 + s), random_batch(*device, 200 + s)}, 1e-2f);
    run.losses.push_back(step.loss);
    run.grad_norms.push_back(step.grad_norm);
  }
  for (const NamedParameter& p : model.named_parameters()) {
    run.parameters.emplace_back(p.name, p.parameter->value.to_host_f32());
  }
  return run;
}

std::size_t differing_words(const std::vector<float>& a, const std::vector<float>& b) {
  std::size_t differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differing += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return differing;
}

TEST(LocalTrainerThreadCount, OneTwoAndThreeThreadsTrainToTheSameBits) {
  const int saved = cpu_threads();
  const TrainedRun one = train(1);
  for (int threads : {2, 3}) {
    const TrainedRun other = train(threads);
    for (int s = 0; s < kSteps; ++s) {
      EXPECT_EQ(one.losses[s], other.losses[s]) << "loss of step " << s << " at " << threads << " threads";
      EXPECT_EQ(one.grad_norms[s], other.grad_norms[s])
          << "gradient norm of step " << s << " at " << threads << " threads";
    }
    ASSERT_EQ(one.parameters.size(), other.parameters.size());
    int differing_tensors = 0;
    for (std::size_t p = 0; p < one.parameters.size(); ++p) {
      const auto& [name, values] = one.parameters[p];
      const std::size_t differing = differing_words(values, other.parameters[p].second);
      differing_tensors += differing > 0;
      EXPECT_EQ(differing, 0u) << name << ": " << differing << " of " << values.size() << " values differ at "
                               << threads << " threads from 1 thread after " << kSteps << " steps";
    }
    EXPECT_EQ(differing_tensors, 0) << "of " << one.parameters.size() << " tensors at " << threads << " threads";
  }
  set_cpu_threads(saved);
}

}  // namespace
}  // namespace tessera
