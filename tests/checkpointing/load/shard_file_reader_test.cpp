// ShardFileReader: ranges that split chunks, cover them whole or overlap read the stored values,
// from uncompressed chunks (pread) and compressed ones (HDF5); verify() checks without writing;
// several datasets read in one call, in any order; a flipped byte and a truncated file are refused
// naming the dataset.
#include "tessera/checkpointing/load/shard_file_reader.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing {
namespace {

// A shard file of one unit "h.0" whose "master" holds i * 0.5 at element i, in chunks of `chunk`.
std::vector<float> write_master(const std::string& path, std::int64_t n, std::int64_t chunk,
                                CheckpointCompression compression) {
  std::vector<float> master(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) master[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.5f;
  ShardSnapshot snapshot;
  snapshot.units.push_back({"h.0", n, n, 0, {{"master", DType::kF32, 1, master.data()}}});
  ShardWriteOptions options;
  options.chunk_elements = chunk;
  options.compression = compression;
  write_shard_file(path, snapshot, 0, 1, 7, 0x1234, options);
  return master;
}

std::string thrown(const std::function<void()>& call) {
  try {
    call();
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(ShardFileReader, RangesThatSplitCoverAndOverlapChunks) {
  ScratchDir dir("shard_read");
  for (CheckpointCompression compression : {CheckpointCompression::kNone, CheckpointCompression::kDeflate}) {
    const std::string path =
        (dir / (std::string("shard_") + checkpoint_compression_name(compression) + ".h5")).string();
    const std::int64_t n = 10000, chunk = 1024;
    const std::vector<float> master = write_master(path, n, chunk, compression);
    ShardFileReader reader(path, 0);
    // Whole chunks 1-3, a run splitting chunks 5 and 6, one overlapping it, and the short last chunk.
    const std::vector<std::pair<std::int64_t, std::int64_t>> spans{{1024, 3072}, {5000, 1500}, {5500, 100}, {9990, 10}};
    std::vector<std::vector<float>> outs;
    std::vector<ElementRange> ranges;
    for (const auto& [begin, count] : spans) outs.emplace_back(static_cast<std::size_t>(count), -1.0f);
    for (std::size_t k = 0; k < spans.size(); ++k) ranges.push_back({spans[k].first, spans[k].second, outs[k].data()});
    reader.verify("h.0", "master", DType::kF32, ranges);
    for (const auto& out : outs) ASSERT_EQ(out[0], -1.0f) << "verify() wrote into a range";
    reader.read("h.0", "master", DType::kF32, ranges);
    for (std::size_t k = 0; k < spans.size(); ++k) {
      for (std::int64_t i = 0; i < spans[k].second; ++i) {
        ASSERT_EQ(outs[k][static_cast<std::size_t>(i)], master[static_cast<std::size_t>(spans[k].first + i)])
            << checkpoint_compression_name(compression) << ", range " << k << ", element " << spans[k].first + i;
      }
    }
    // Chunks 1-3, 4-6 and 9 were read, twice (verify and read).
    EXPECT_EQ(reader.bytes_read(), 2 * (3 + 3 + 1) * chunk * 4 - 2 * (chunk * 10 - n) * 4)
        << checkpoint_compression_name(compression);
  }
}

TEST(ShardFileReader, ManyDatasetsInOneCallInAnyOrder) {
  ScratchDir dir("shard_many");
  const std::string path = (dir / "shard_00000.h5").string();
  const std::int64_t n = 5000;
  std::vector<float> master(static_cast<std::size_t>(n)), moment(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    master[static_cast<std::size_t>(i)] = static_cast<float>(i);
    moment[static_cast<std::size_t>(i)] = -0.25f * static_cast<float>(i);
  }
  ShardSnapshot snapshot;
  snapshot.units.push_back(
      {"h.0", n, n, 0, {{"master", DType::kF32, 1, master.data()}, {"exp_avg", DType::kF32, 1, moment.data()}}});
  ShardWriteOptions options;
  options.chunk_elements = 1024;
  write_shard_file(path, snapshot, 0, 1, 7, 0x1234, options);
  ShardFileReader reader(path, 0);
  std::vector<float> got_moment(300, -1.0f), got_master(n, -1.0f);
  // The later dataset first; a run inside the moment's chunks, the whole master.
  const std::vector<DatasetRanges> reads{{"h.0", "exp_avg", DType::kF32, {{2000, 300, got_moment.data()}}},
                                         {"h.0", "master", DType::kF32, {{0, n, got_master.data()}}}};
  reader.verify(reads);
  EXPECT_EQ(got_moment[0], -1.0f) << "verify() wrote into a range";
  reader.read(reads);
  for (std::int64_t i = 0; i < 300; ++i)
    ASSERT_EQ(got_moment[static_cast<std::size_t>(i)], moment[static_cast<std::size_t>(2000 + i)]);
  EXPECT_EQ(got_master, master);
  // The master's 5 chunks (of 1024, the last one short) and the moment's chunks 1 and 2 (1024..2047
  // and 2048..3071 hold 2000..2299), each read twice.
  EXPECT_EQ(reader.bytes_read(), 2 * (n + 2 * 1024) * 4);
}

// Where the chunk of h.0's master that starts at element `first` is stored in the file.
std::int64_t master_chunk_address(const std::string& path, std::int64_t first) {
  detail::Hdf5Guard guard;
  detail::H5Id f = detail::open_file_read(path);
  detail::H5Id d = detail::open_dataset(f.get(), "/units/h.0/master", path);
  const hsize_t offset[1] = {static_cast<hsize_t>(first)};
  unsigned mask = 0;
  haddr_t addr = 0;
  hsize_t size = 0;
  EXPECT_GE(H5Dget_chunk_info_by_coord(d.get(), offset, &mask, &addr, &size), 0) << "chunk at element " << first;
  return static_cast<std::int64_t>(addr);
}

TEST(ShardFileReader, AFlippedByteAndATruncatedFileAreRefused) {
  ScratchDir dir("shard_damage");
  const std::string path = (dir / "shard_00000.h5").string();
  const std::int64_t n = 8192, chunk = 1024;
  write_master(path, n, chunk, CheckpointCompression::kNone);
  const std::int64_t address = master_chunk_address(path, 2 * chunk);
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(address + 100);
    io.put('\x5a');
  }
  std::vector<float> out(static_cast<std::size_t>(n));
  ShardFileReader reader(path, 0);
  const std::string flipped = thrown([&] { reader.verify("h.0", "master", DType::kF32, {{0, n, out.data()}}); });
  EXPECT_NE(flipped.find(path + ":/units/h.0/master is corrupted: chunk 2 (elements 2048..3071)"), std::string::npos)
      << flipped;
  // Cut the file inside the dataset's last chunk (after the reader opened it).
  const std::int64_t last = master_chunk_address(path, 7 * chunk);
  std::filesystem::resize_file(path, static_cast<std::uintmax_t>(last + 10));
  const std::string cut = thrown([&] { reader.read("h.0", "master", DType::kF32, {{7 * chunk, 100, out.data()}}); });
  EXPECT_NE(cut.find("reading chunk 7 of " + path + ":/units/h.0/master: the file ends after 10 of 4096 bytes"),
            std::string::npos)
      << cut;
}

}  // namespace
}  // namespace tessera::testing
