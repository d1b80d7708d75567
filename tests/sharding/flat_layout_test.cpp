// FlatLayout: offsets in parameter order, padding to a multiple of the shard group, shard ranges,
// the parameter segments of a range (with their weight-decay flags), and initial images equal to
// what materialize_parameters gives each parameter, on any number of threads and for every shard
// boundary (a range starting inside a normally initialised parameter).
#include "tessera/sharding/flat_layout.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include "tessera/runtime/device.hpp"

namespace tessera {
namespace {

// Three parameters of 5, 3 and 4 elements; only the first and last decay.
class ThreeParameters final : public Module {
 public:
  ThreeParameters() {
    register_parameter("a", {5}, ParameterInit::normal(0.02f), true);
    register_parameter("b", {3}, ParameterInit::ones(), false);
    register_parameter("c", {2, 2}, ParameterInit::normal(0.5f), true);
  }
  std::string type_name() const override { return "ThreeParameters"; }
  Tensor forward(Context&, const Tensor& x) override { return x; }
  Tensor backward(Context&, Tensor dy) override { return dy; }
};

TEST(FlatLayout, OffsetsPaddingAndShards) {
  ThreeParameters m;
  const FlatLayout layout(m.named_parameters(), 5, 2);  // 12 elements on 5 ranks: shards of 3
  ASSERT_EQ(layout.entries().size(), 3u);
  EXPECT_EQ(layout.entries()[1].name, "b");
  EXPECT_EQ(layout.entries()[1].offset, 5);
  EXPECT_EQ(layout.entries()[2].offset, 8);
  EXPECT_EQ(layout.numel(), 12);
  EXPECT_EQ(layout.shard_numel(), 3);
  EXPECT_EQ(layout.padded_numel(), 15);
  EXPECT_EQ(layout.shard_begin(), 6);
  EXPECT_EQ(layout.shard().begin, 6);
  EXPECT_EQ(layout.full().count, 15);
}

TEST(FlatLayout, SegmentsAreRelativeToTheRangeAndCarryDecay) {
  ThreeParameters m;
  const FlatLayout layout(m.named_parameters(), 2, 0);  // padded to 12
  // [4, 10): the last element of a, all of b, the first two of c.
  const std::vector<ParamSegment> s = layout.segments({4, 6});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].begin, 0);
  EXPECT_EQ(s[0].count, 1);
  EXPECT_TRUE(s[0].decay);
  EXPECT_EQ(s[1].begin, 1);
  EXPECT_EQ(s[1].count, 3);
  EXPECT_FALSE(s[1].decay);
  EXPECT_EQ(s[2].begin, 4);
  EXPECT_EQ(s[2].count, 2);
  // Padding yields nothing.
  const FlatLayout padded(m.named_parameters(), 5, 4);  // shard [12, 15): all padding
  EXPECT_TRUE(padded.segments(padded.shard()).empty());
}

TEST(FlatLayout, InitialImageEqualsMaterializedValues) {
  auto device = make_cpu_device();  // outlives the parameters' storage
  ThreeParameters sharded, reference;
  materialize_parameters(reference, *device, 7);
  const FlatLayout layout(sharded.named_parameters(), 4, 1);  // shards of 3: [3, 6)
  const std::vector<float> full = layout.initial_image(layout.full(), 7);
  const std::vector<float> shard = layout.initial_image(layout.shard(), 7);
  ASSERT_EQ(full.size(), 12u);
  std::vector<float> expected;
  for (Parameter* p : reference.parameters()) {
    for (float v : p->value.to_host_f32()) expected.push_back(v);
  }
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(full[i], expected[i]) << "element " << i;
  for (std::size_t i = 0; i < shard.size(); ++i) EXPECT_EQ(shard[i], full[3 + i]) << "shard element " << i;
}

// Forty parameters of odd sizes, all normally initialised.
class ManyParameters final : public Module {
 public:
  ManyParameters() {
    for (int i = 0; i < 40; ++i) {
      register_parameter("p" + std::to_string(i), {7 + 13 * i}, ParameterInit::normal(0.02f + 0.01f * i), true);
    }
  }
  std::string type_name() const override { return "ManyParameters"; }
  Tensor forward(Context&, const Tensor& x) override { return x; }
  Tensor backward(Context&, Tensor dy) override { return dy; }
};

TEST(FlatLayout, InitialImageIsTheSameOnAnyNumberOfThreadsAndForEveryShard) {
  ManyParameters m;
  const FlatLayout whole(m.named_parameters(), 1, 0);
  const int threads_before = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<float> one_thread = whole.initial_image(whole.full(), 11);
  omp_set_num_threads(4);
  const std::vector<float> four_threads = whole.initial_image(whole.full(), 11);
  EXPECT_EQ(one_thread, four_threads);
  for (int ranks : {3, 7}) {
    for (int rank = 0; rank < ranks; ++rank) {
      const FlatLayout layout(m.named_parameters(), ranks, rank);
      const FlatRange shard = layout.shard();
      const std::vector<float> image = layout.initial_image(shard, 11);
      for (std::int64_t i = 0; i < shard.count; ++i) {
        const std::int64_t at = shard.begin + i;
        const float expected = at < whole.numel() ? one_thread[static_cast<std::size_t>(at)] : 0.0f;  // padding: 0
        ASSERT_EQ(image[static_cast<std::size_t>(i)], expected) << "rank " << rank << "/" << ranks << " element " << at;
      }
    }
  }
  omp_set_num_threads(threads_before);
}

}  // namespace
}  // namespace tessera
