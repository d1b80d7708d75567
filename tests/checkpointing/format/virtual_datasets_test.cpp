// flat_range_boxes: every row-major flat range of 1-D, 2-D and 3-D shapes becomes blocks that
// cover exactly its elements, in order, and at most 2 * ndim - 1 of them. check_virtual_sources:
// a virtual dataset whose source file or source dataset is missing (which HDF5 reads as zeros) is
// refused naming both; sources beside the file, in the file itself, and plain datasets pass.
#include "tessera/checkpointing/format/virtual_datasets.hpp"

#include <gtest/gtest.h>

#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tests/support/scratch_dir.hpp"

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

using detail::H5Id;

// dir/<file>:/data, 4 floats.
void write_source(const std::string& file) {
  H5Id f = detail::create_file(file);
  const hsize_t dims[1] = {4};
  H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  H5Id d(H5Dcreate2(f.get(), "data", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
}

// A virtual dataset `name` in `file` over (source file, source dataset).
void add_virtual(hid_t file, const std::string& name, const char* source_file, const char* source_dataset) {
  const hsize_t dims[1] = {4};
  H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  H5Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_virtual(dcpl.get(), space.get(), source_file, source_dataset, space.get());
  H5Id d(H5Dcreate2(file, name.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
}

std::string refusal(hid_t file, const std::string& name) {
  H5Id d = detail::open_dataset(file, name, "meta.h5");
  try {
    check_virtual_sources(d.get(), "meta.h5:/" + name);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckVirtualSources, MissingSourcesAreRefusedNamingThem) {
  testing::ScratchDir dir("check_virtual_sources");
  detail::Hdf5Guard guard;
  const std::string meta = (dir / "meta.h5").string(), shard = (dir / "shard.h5").string();
  write_source(shard);
  write_source((dir / "shard_%.h5").string());
  {
    H5Id f = detail::create_file(meta);
    add_virtual(f.get(), "beside", "shard.h5", "data");
    add_virtual(f.get(), "no_dataset", "shard.h5", "group/missing");
    add_virtual(f.get(), "own", ".", "plain");
    add_virtual(f.get(), "own_missing", ".", "absent");
    add_virtual(f.get(), "percent", "shard_%%.h5", "data");  // "%%": a file named shard_%.h5
    const hsize_t dims[1] = {4};
    H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
    H5Id d(H5Dcreate2(f.get(), "plain", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  }
  H5Id f = detail::open_file_read(meta);
  EXPECT_EQ(refusal(f.get(), "beside"), "");
  EXPECT_EQ(refusal(f.get(), "own"), "");
  EXPECT_EQ(refusal(f.get(), "plain"), "");
  EXPECT_NE(refusal(f.get(), "no_dataset")
                .find("meta.h5:/no_dataset is a virtual dataset whose source shard.h5:group/missing does not exist"),
            std::string::npos)
      << refusal(f.get(), "no_dataset");
  EXPECT_NE(refusal(f.get(), "own_missing").find("source .:absent does not exist"), std::string::npos)
      << refusal(f.get(), "own_missing");
  EXPECT_EQ(refusal(f.get(), "percent"), "");
  std::filesystem::remove(shard);
  EXPECT_NE(refusal(f.get(), "beside")
                .find("meta.h5:/beside is a virtual dataset whose source file " + shard + " is missing or unreadable"),
            std::string::npos)
      << refusal(f.get(), "beside");
}

}  // namespace
}  // namespace tessera
