// TensorSlice: piece sizes, local and global shapes, the runs of local elements in the global
// tensor, and a tensor-parallel piece's initial values being those of the global tensor's elements.
#include "tessera/model/parallel/tensor_slice.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "tessera/model/module.hpp"

namespace tessera {
namespace {

TEST(TensorSlice, PiecesAreEvenOrOneLargerFirst) {
  EXPECT_EQ(piece_size(13, 2, 0), 7);
  EXPECT_EQ(piece_size(13, 2, 1), 6);
  EXPECT_EQ(piece_start(13, 2, 1), 7);
  EXPECT_EQ(piece_size(13, 4, 0), 4);
  EXPECT_EQ(piece_start(13, 4, 3), 10);
  EXPECT_EQ(piece_size(13, 4, 3), 3);
}

TEST(TensorSlice, ShapesFollowTheSegments) {
  const TensorSlice qkv = slice_of(0, {8, 4, 4}, 2, 1);  // q, k, v blocks of a fused projection
  EXPECT_EQ(local_shape({16, 8}, qkv), (Shape{8, 8}));
  EXPECT_EQ(global_shape({8, 8}, qkv), (Shape{16, 8}));
  EXPECT_THROW(local_shape({15, 8}, qkv), std::invalid_argument);
  const TensorSlice row = slice_of(1, {8}, 4, 2);
  EXPECT_EQ(local_shape({3, 8}, row), (Shape{3, 2}));
  EXPECT_EQ(local_shape({5, 3}, TensorSlice{}), (Shape{5, 3}));
}

// The global flat index of every local element, from the runs.
std::vector<std::int64_t> global_positions(const Shape& local, const TensorSlice& slice) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(shape_numel(local)), -1);
  for_each_global_run(local, slice, 0, shape_numel(local), [&](std::int64_t g, std::int64_t l, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(l + i)] = g + i;
  });
  return out;
}

TEST(TensorSlice, RunsMapLocalElementsToTheirGlobalPlaces) {
  // Global (6, 2) made of segments {4, 2} along dim 0, part 1 of 2: rows 2, 3 (first segment) and 5.
  EXPECT_EQ(global_positions({3, 2}, slice_of(0, {4, 2}, 2, 1)), (std::vector<std::int64_t>{4, 5, 6, 7, 10, 11}));
  // Global (2, 5) split along dim 1 in 2 parts, part 0: columns 0..2 of each row.
  EXPECT_EQ(global_positions({2, 3}, slice_of(1, {5}, 2, 0)), (std::vector<std::int64_t>{0, 1, 2, 5, 6, 7}));
  // A sub-range of the local elements.
  std::vector<std::int64_t> seen;
  for_each_global_run({2, 2}, slice_of(1, {5}, 2, 1), 1, 3, [&](std::int64_t g, std::int64_t l, std::int64_t n) {
    seen.insert(seen.end(), {g, l, n});
  });
  EXPECT_EQ(seen, (std::vector<std::int64_t>{4, 1, 1, 8, 2, 2}));  // (row 0, col 4), then row 1 cols 3-4
}

TEST(TensorSlice, APieceStartsWithTheGlobalTensorsValues) {
  const Parameter whole("weight", {6, 5}, ParameterInit::normal(0.02f), true);
  std::vector<float> full;
  initial_values(whole, "h.0.mlp.fc.weight", 7, full);
  for (int dim : {0, 1}) {
    for (int part = 0; part < 2; ++part) {
      const TensorSlice slice = dim == 0 ? slice_of(0, {4, 2}, 2, part) : slice_of(1, {5}, 2, part);
      const Parameter piece("weight", local_shape({6, 5}, slice), ParameterInit::normal(0.02f), true, slice);
      std::vector<float> values;
      initial_values(piece, "h.0.mlp.fc.weight", 7, values);
      const std::vector<std::int64_t> where = global_positions(piece.shape, slice);
      for (std::size_t i = 0; i < values.size(); ++i) {
        EXPECT_EQ(values[i], full[static_cast<std::size_t>(where[i])]) << "dim " << dim << " part " << part << " " << i;
      }
      // Part-way, as a shard of the flat buffer asks for it.
      std::vector<float> tail(values.size() - 3);
      initial_values(piece, "h.0.mlp.fc.weight", 7, std::span<float>(tail), 3);
      for (std::size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], values[i + 3]);
    }
  }
}

}  // namespace
}  // namespace tessera
