// flat_range_boxes: every row-major flat range of 1-D, 2-D and 3-D shapes becomes blocks that
// cover exactly its elements, in order, and at most 2 * ndim - 1 of them.
#include "tessera/checkpointing/format/virtual_datasets.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

// The flat indices a list of boxes covers, in row-major order of each box, box after box.
std::vector<std::int64_t> covered(const Shape& shape, const std::vector<ArrayBox>& boxes) {
  std::vector<std::int64_t> out;
  for (const ArrayBox& b : boxes) {
    std::vector<std::int64_t> idx(b.start.size(), 0);
    for (std::int64_t n = 0; n < b.numel(); ++n) {
      std::int64_t flat = 0;
      for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + b.start[d] + idx[d];
      out.push_back(flat);
      for (std::size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < b.count[d]) break;
        idx[d] = 0;
      }
    }
  }
  return out;
}

TEST(FlatRangeBoxes, CoverExactlyTheRangeInOrder) {
  for (const Shape& shape : {Shape{7}, Shape{4, 5}, Shape{3, 4, 5}, Shape{1, 6}, Shape{6, 1}}) {
    const std::int64_t n = shape_numel(shape);
    for (std::int64_t a = 0; a <= n; ++a) {
      for (std::int64_t b = a; b <= n; ++b) {
        const auto boxes = flat_range_boxes(shape, a, b);
        std::vector<std::int64_t> expected;
        for (std::int64_t i = a; i < b; ++i) expected.push_back(i);
        EXPECT_EQ(covered(shape, boxes), expected)
            << "shape " << shape_string(shape) << " range [" << a << ", " << b << ")";
        EXPECT_LE(boxes.size(), 2 * shape.size() - 1)
            << "shape " << shape_string(shape) << " range [" << a << ", " << b << ")";
      }
    }
  }
}

TEST(FlatRangeBoxes, WholeArrayIsOneBox) {
  const auto boxes = flat_range_boxes({3, 4, 5}, 0, 60);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].count, (std::vector<std::int64_t>{3, 4, 5}));
}

}  // namespace
}  // namespace tessera
