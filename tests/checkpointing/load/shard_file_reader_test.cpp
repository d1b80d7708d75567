// ShardFileReader: ranges that split chunks, cover them whole or overlap read the stored values,
// from uncompressed chunks (pread) and compressed ones (HDF5); verify() checks without writing;
// several datasets read in one call, in any order; a flipped byte and a truncated file are refused
// naming the dataset. Both chunk checksums (XXH3-64, what this build writes, and XXH64, what format 3
// files hold) are verified and a damaged chunk refused under each; an unknown checksum is refused by
// name; one and two threads read the same values and refuse the same chunk.
#include "tessera/checkpointing/load/shard_file_reader.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"
#include "tessera/runtime/device.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing {
namespace {

// A shard file of one unit "h.0" whose "master" holds i * 0.5 at element i, in chunks of `chunk`.
std::vector<float> write_master(const std::string& path, std::int64_t n, std::int64_t chunk,
                                CheckpointCompression compression,
                                ChunkChecksum checksum = ChunkChecksum::kXxh3_64) {
  std::vector<float> master(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) master[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.5f;
  ShardSnapshot snapshot;
  snapshot.units.push_back({"h.0", n, n, 0, {{"master", DType::kF32, 1, master.data()}}});
  ShardWriteOptions options;
  options.chunk_elements = chunk;
  options.compression = compression;
  options.checksum = checksum;
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

// Writes byte 0x5a at `offset` of the file `path`.
void damage(const std::string& path, std::int64_t offset) {
  std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
  io.seekp(offset);
  io.put('\x5a');
}

// Rewrites the root attribute `name` of the file `path` (removes it when `value` is empty).
void set_root_attribute(const std::string& path, const std::string& name, const std::string& value) {
  detail::Hdf5Guard guard;
  detail::H5Id f = detail::open_file_readwrite(path);
  if (detail::has_attribute(f.get(), name)) H5Adelete(f.get(), name.c_str());
  if (!value.empty()) detail::write_attribute(f.get(), name, value);
}

void set_format(const std::string& path, std::int64_t format) {
  detail::Hdf5Guard guard;
  detail::H5Id f = detail::open_file_readwrite(path);
  H5Adelete(f.get(), "tessera_checkpoint_format");
  detail::write_attribute(f.get(), "tessera_checkpoint_format", format);
}

TEST(ShardFileReader, EachChecksumIsVerifiedAndRefusesADamagedChunk) {
  ScratchDir dir("shard_checksums");
  const std::int64_t n = 8192, chunk = 1024;
  for (ChunkChecksum checksum : {ChunkChecksum::kXxh3_64, ChunkChecksum::kXxh64}) {
    const std::string name = chunk_checksum_name(checksum);
    for (CheckpointCompression compression : {CheckpointCompression::kNone, CheckpointCompression::kDeflate}) {
      const std::string path = (dir / (name + "_" + checkpoint_compression_name(compression) + ".h5")).string();
      const std::vector<float> master = write_master(path, n, chunk, compression, checksum);
      ShardFileReader reader(path, 0);
      EXPECT_EQ(reader.checksum(), checksum) << path;
      std::vector<float> out(static_cast<std::size_t>(n), -1.0f);
      reader.read("h.0", "master", DType::kF32, {{0, n, out.data()}});
      EXPECT_EQ(out, master) << path;
    }
    const std::string path = (dir / (name + "_damaged.h5")).string();
    write_master(path, n, chunk, CheckpointCompression::kNone, checksum);
    damage(path, master_chunk_address(path, 2 * chunk) + 100);
    ShardFileReader reader(path, 0);
    std::vector<float> out(static_cast<std::size_t>(n));
    const std::string refused = thrown([&] { reader.read("h.0", "master", DType::kF32, {{0, n, out.data()}}); });
    EXPECT_NE(refused.find(path + ":/units/h.0/master is corrupted: chunk 2 (elements 2048..3071) has " + name + " "),
              std::string::npos)
        << refused;
    EXPECT_NE(refused.find("resume from an earlier checkpoint"), std::string::npos) << refused;
  }
}

// A format-3 file: XXH64 tables (master_xxh64) and no chunk_checksum attribute.
TEST(ShardFileReader, AFormat3FileIsVerifiedWithXxh64) {
  ScratchDir dir("shard_format3");
  const std::string path = (dir / "shard_00000.h5").string();
  const std::int64_t n = 5000, chunk = 1024;
  const std::vector<float> master = write_master(path, n, chunk, CheckpointCompression::kNone, ChunkChecksum::kXxh64);
  set_root_attribute(path, "chunk_checksum", "");
  set_format(path, 3);
  {
    ShardFileReader reader(path, 0);
    EXPECT_EQ(reader.checksum(), ChunkChecksum::kXxh64);
    std::vector<float> out(static_cast<std::size_t>(n));
    reader.read("h.0", "master", DType::kF32, {{0, n, out.data()}});
    EXPECT_EQ(out, master);
  }
  damage(path, master_chunk_address(path, 4 * chunk) + 7);
  ShardFileReader reader(path, 0);
  const std::string refused = thrown([&] { reader.verify("h.0", "master", DType::kF32, {{0, n, nullptr}}); });
  EXPECT_NE(refused.find("master is corrupted: chunk 4 (elements 4096..4999) has xxh64 "), std::string::npos)
      << refused;
}

TEST(ShardFileReader, AnUnknownOrMissingChecksumIsRefused) {
  ScratchDir dir("shard_unknown_checksum");
  const std::string path = (dir / "shard_00000.h5").string();
  write_master(path, 2048, 1024, CheckpointCompression::kNone);
  set_root_attribute(path, "chunk_checksum", "crc32c");
  try {
    ShardFileReader reader(path, 0);
    ADD_FAILURE() << "a file with chunk checksum crc32c was opened";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.kind(), CheckpointErrorKind::kUnknownFormat) << e.what();
    EXPECT_NE(std::string(e.what()).find(path + " names chunk checksum 'crc32c', which this build does not know"),
              std::string::npos)
        << e.what();
  }
  set_root_attribute(path, "chunk_checksum", "");
  const std::string missing = thrown([&] { ShardFileReader reader(path, 0); });
  EXPECT_NE(missing.find(path + " is corrupted: it has format version 4 but no chunk_checksum attribute"),
            std::string::npos)
      << missing;
}

// Many chunks of two datasets, split over the threads: the values read and the chunk refused (the
// first damaged one in the file, though a later one is damaged too) do not depend on the threads.
TEST(ShardFileReader, OneAndTwoThreadsReadTheSameAndRefuseTheSameChunk) {
  ScratchDir dir("shard_threads");
  const std::string path = (dir / "shard_00000.h5").string();
  const std::int64_t n = 64 * 1024, chunk = 1024;
  std::vector<float> master(static_cast<std::size_t>(n)), moment(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    master[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.25f;
    moment[static_cast<std::size_t>(i)] = static_cast<float>(n - i);
  }
  ShardSnapshot snapshot;
  snapshot.units.push_back(
      {"h.0", n, n, 0, {{"master", DType::kF32, 1, master.data()}, {"exp_avg", DType::kF32, 1, moment.data()}}});
  ShardWriteOptions options;
  options.chunk_elements = chunk;
  write_shard_file(path, snapshot, 0, 1, 7, 0x1234, options);
  const int threads_before = cpu_threads();
  auto read_with = [&](int threads, std::vector<float>& m, std::vector<float>& v) {
    set_cpu_threads(threads);
    m.assign(static_cast<std::size_t>(n), -1.0f);
    v.assign(static_cast<std::size_t>(n), -1.0f);
    ShardFileReader reader(path, 0);
    const std::vector<DatasetRanges> reads{{"h.0", "exp_avg", DType::kF32, {{0, n, v.data()}}},
                                           {"h.0", "master", DType::kF32, {{100, n - 200, m.data() + 100}}}};
    return thrown([&] { reader.read(reads); });
  };
  std::vector<float> m1, v1, m2, v2;
  EXPECT_EQ(read_with(1, m1, v1), "(nothing thrown)");
  EXPECT_EQ(read_with(2, m2, v2), "(nothing thrown)");
  EXPECT_EQ(v1, moment);
  EXPECT_EQ(v2, moment);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(m1[100], master[100]);
  EXPECT_EQ(m1[static_cast<std::size_t>(n - 101)], master[static_cast<std::size_t>(n - 101)]);

  damage(path, master_chunk_address(path, 50 * chunk) + 9);
  damage(path, master_chunk_address(path, 10 * chunk) + 4000);
  const std::string one = read_with(1, m1, v1), two = read_with(2, m2, v2);
  set_cpu_threads(threads_before);
  EXPECT_NE(one.find(path + ":/units/h.0/master is corrupted: chunk 10 (elements 10240..11263)"), std::string::npos)
      << one;
  EXPECT_EQ(two, one);
}

}  // namespace
}  // namespace tessera::testing
