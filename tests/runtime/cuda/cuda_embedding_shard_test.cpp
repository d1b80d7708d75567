// CudaKernels vocabulary-sharded embedding against CpuKernels: a vocabulary of 11 in 2 and 3 uneven
// shards and one of 5000 in 3, with and without a position table, channels over one 1024-channel
// slice: forward and backward give the CPU shard ops' bits for f32, and the shards' dwte
// concatenated give the GPU whole-table backward's bits; a shard of the whole vocabulary gives the
// whole-table ops' bits; bf16 within the bf16 tolerance of the CPU; a token outside the vocabulary
// throws std::out_of_range naming it before anything is written; a shard outside it is refused.
// Skips without a CUDA device.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/precision/bf16.hpp"
#include "tests/runtime/cpu/vocab_shards.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::random_floats;
using test::random_tokens;
using test::VocabShard;

class CudaEmbeddingShard : public test::CudaKernelTest {};

struct EmbShardCase {
  std::int64_t b, t, c, vocab, parts;
};

std::string describe_emb_shard(const EmbShardCase& s, const VocabShard& shard) {
  return "embedding shard f32 (b=" + std::to_string(s.b) + ",t=" + std::to_string(s.t) + ",c=" + std::to_string(s.c) +
         ") " + test::describe_shard(shard, s.vocab);
}

void check_emb_shards_against_cpu(const CudaKernels& gpu, const CpuKernels& cpu, const EmbShardCase& s, bool positions,
                                  std::uint32_t seed) {
  const auto tokens = random_tokens(s.b * s.t, static_cast<std::int32_t>(s.vocab), seed);
  const auto wte = random_floats(s.vocab * s.c, seed + 1), wpe = random_floats(s.t * s.c, seed + 2);
  const auto dout = random_floats(s.b * s.t * s.c, seed + 3);
  const auto dwte0 = random_floats(s.vocab * s.c, seed + 4), dwpe0 = random_floats(s.t * s.c, seed + 5);
  DeviceBuffer<std::int32_t> g_tokens(tokens);
  DeviceBuffer<float> g_wpe(wpe), g_dout(dout), g_full_dwte(dwte0), g_full_dwpe(dwpe0);
  gpu.embedding_backward(g_full_dwte.get(), positions ? g_full_dwpe.get() : nullptr, g_dout.get(), g_tokens.get(), s.b,
                         s.t, s.c, s.vocab);
  std::vector<float> joined;
  for (const VocabShard& shard : test::split_vocab(s.vocab, s.parts)) {
    const std::string label = describe_emb_shard(s, shard) + (positions ? "" : " without wpe");
    const auto part_wte = test::shard_rows(wte, shard, s.c);
    auto dwte = test::shard_rows(dwte0, shard, s.c), dwpe = dwpe0;
    std::vector<float> out(s.b * s.t * s.c);
    DeviceBuffer<float> g_wte(part_wte), g_out(out.size()), g_dwte(dwte), g_dwpe(dwpe);
    const float* p_wpe = positions ? g_wpe.get() : nullptr;
    gpu.embedding_shard_forward(g_out.get(), g_tokens.get(), g_wte.get(), p_wpe, s.b, s.t, s.c, shard.first, shard.rows,
                                s.vocab);
    cpu.embedding_shard_forward(out.data(), tokens.data(), part_wte.data(), positions ? wpe.data() : nullptr, s.b, s.t,
                                s.c, shard.first, shard.rows, s.vocab);
    test::expect_same_bits(g_out.download(), out, label + " forward vs CPU");
    gpu.embedding_shard_backward(g_dwte.get(), positions ? g_dwpe.get() : nullptr, g_dout.get(), g_tokens.get(), s.b,
                                 s.t, s.c, shard.first, shard.rows, s.vocab);
    cpu.embedding_shard_backward(dwte.data(), positions ? dwpe.data() : nullptr, dout.data(), tokens.data(), s.b, s.t,
                                 s.c, shard.first, shard.rows, s.vocab);
    const auto g_dwte_host = g_dwte.download();
    test::expect_same_bits(g_dwte_host, dwte, label + " backward dwte vs CPU");
    test::expect_same_bits(g_dwpe.download(), dwpe, label + " backward dwpe vs CPU");
    joined.insert(joined.end(), g_dwte_host.begin(), g_dwte_host.end());
  }
  test::expect_same_bits(joined, g_full_dwte.download(),
                         "embedding shards' dwte concatenated vs embedding_backward, vocab " + std::to_string(s.vocab));
}

TEST_F(CudaEmbeddingShard, ForwardAndBackwardGiveTheCpuShardsBits) {
  for (const bool positions : {true, false}) {
    check_emb_shards_against_cpu(*gpu_, cpu_, {3, 7, 12, 11, 2}, positions, 1);
    check_emb_shards_against_cpu(*gpu_, cpu_, {3, 7, 12, 11, 3}, positions, 2);
    check_emb_shards_against_cpu(*gpu_, cpu_, {2, 300, 1100, 5000, 3}, positions, 3);  // two channel slices
  }
}

TEST_F(CudaEmbeddingShard, AShardOfTheWholeVocabularyIsTheWholeTableOp) {
  const std::int64_t b = 2, t = 9, c = 40, vocab = 11;
  const auto tokens = random_tokens(b * t, vocab, 4);
  const auto wte = random_floats(vocab * c, 5), wpe = random_floats(t * c, 6), dout = random_floats(b * t * c, 7);
  DeviceBuffer<std::int32_t> g_tokens(tokens);
  DeviceBuffer<float> g_wte(wte), g_wpe(wpe), g_dout(dout), g_a(b * t * c), g_b(b * t * c);
  gpu_->embedding_forward(g_a.get(), g_tokens.get(), g_wte.get(), g_wpe.get(), b, t, c, vocab);
  gpu_->embedding_shard_forward(g_b.get(), g_tokens.get(), g_wte.get(), g_wpe.get(), b, t, c, 0, vocab, vocab);
  test::expect_same_bits(g_b.download(), g_a.download(), "whole-vocabulary shard forward vs embedding_forward");
  DeviceBuffer<float> g_dwte_a(wte), g_dwte_b(wte), g_dwpe_a(wpe), g_dwpe_b(wpe);
  gpu_->embedding_backward(g_dwte_a.get(), g_dwpe_a.get(), g_dout.get(), g_tokens.get(), b, t, c, vocab);
  gpu_->embedding_shard_backward(g_dwte_b.get(), g_dwpe_b.get(), g_dout.get(), g_tokens.get(), b, t, c, 0, vocab,
                                 vocab);
  test::expect_same_bits(g_dwte_b.download(), g_dwte_a.download(), "whole-vocabulary shard dwte");
  test::expect_same_bits(g_dwpe_b.download(), g_dwpe_a.download(), "whole-vocabulary shard dwpe");
}

TEST_F(CudaEmbeddingShard, Bf16MatchesTheCpu) {
  const std::int64_t b = 2, t = 33, c = 96, vocab = 50, first = 17, rows = 16;
  const auto tokens = random_tokens(b * t, vocab, 8);
  std::vector<Bf16> wte, wpe, dout;
  for (float x : random_floats(rows * c, 9)) wte.push_back(from_f32<Bf16>(x));
  for (float x : random_floats(t * c, 10)) wpe.push_back(from_f32<Bf16>(x));
  for (float x : random_floats(b * t * c, 11)) dout.push_back(from_f32<Bf16>(x));
  std::vector<Bf16> out(b * t * c), dwte(rows * c, from_f32<Bf16>(0.0f));
  DeviceBuffer<std::int32_t> g_tokens(tokens);
  DeviceBuffer<Bf16> g_wte(wte), g_wpe(wpe), g_dout(dout), g_out(out.size()), g_dwte(dwte);
  gpu_->embedding_shard_forward(g_out.get(), g_tokens.get(), g_wte.get(), g_wpe.get(), b, t, c, first, rows, vocab);
  cpu_.embedding_shard_forward(out.data(), tokens.data(), wte.data(), wpe.data(), b, t, c, first, rows, vocab);
  gpu_->embedding_shard_backward(g_dwte.get(), nullptr, g_dout.get(), g_tokens.get(), b, t, c, first, rows, vocab);
  cpu_.embedding_shard_backward(dwte.data(), nullptr, dout.data(), tokens.data(), b, t, c, first, rows, vocab);
  auto widen = [](const std::vector<Bf16>& x) {
    std::vector<float> f;
    for (Bf16 v : x) f.push_back(to_f32(v));
    return f;
  };
  test::expect_close(widen(g_out.download()), widen(out), kBf16Tolerance, "embedding shard bf16 forward");
  test::expect_close(widen(g_dwte.download()), widen(dwte), kBf16Tolerance, "embedding shard bf16 dwte");
}

TEST_F(CudaEmbeddingShard, ATokenOutsideTheVocabularyThrowsBeforeAnythingIsWritten) {
  const std::int64_t b = 1, t = 3, c = 2, vocab = 11, first = 4, rows = 4;
  for (const std::int32_t bad : {11, -1}) {
    const std::vector<std::int32_t> tokens = {5, bad, 1};
    DeviceBuffer<std::int32_t> g_tokens(tokens);
    DeviceBuffer<float> g_wte(std::vector<float>(rows * c, 1.0f)), g_out(std::vector<float>(b * t * c, -5.0f));
    DeviceBuffer<float> g_dwte(std::vector<float>(rows * c, 0.0f)), g_dout(std::vector<float>(b * t * c, 1.0f));
    try {
      gpu_->embedding_shard_forward(g_out.get(), g_tokens.get(), g_wte.get(), nullptr, b, t, c, first, rows, vocab);
      ADD_FAILURE() << "embedding_shard_forward accepted token " << bad;
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("token[1] = " + std::to_string(bad)), std::string::npos) << e.what();
    }
    EXPECT_THROW(gpu_->embedding_shard_backward(g_dwte.get(), nullptr, g_dout.get(), g_tokens.get(), b, t, c, first,
                                                rows, vocab),
                 std::out_of_range)
        << "token " << bad;
    for (float x : g_out.download()) EXPECT_EQ(x, -5.0f) << "forward wrote before refusing token " << bad;
    for (float x : g_dwte.download()) EXPECT_EQ(x, 0.0f) << "backward wrote before refusing token " << bad;
  }
  DeviceBuffer<std::int32_t> g_tokens(std::vector<std::int32_t>{0, 1, 2});
  DeviceBuffer<float> g_table(12 * c), g_out(b * t * c);
  EXPECT_THROW(gpu_->embedding_shard_forward(g_out.get(), g_tokens.get(), g_table.get(), nullptr, b, t, c, 8, 4, vocab),
               std::invalid_argument)
      << "rows [8, 12) of a vocabulary of 11";
}

}  // namespace
}  // namespace tessera
