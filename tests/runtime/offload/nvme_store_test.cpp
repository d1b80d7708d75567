// NvmeStore and OffloadFile: values written in ranges that cut chunks come back as written, by
// io_uring with O_DIRECT and by the buffered fallback (which says so); the file carries the rank,
// is removed at the end, a stale one is replaced and a live one refused; a missing directory, a
// regular file, a read-only and a too small file system are refused with the setting and the
// reason; the bytes are booked on the device's NVMe tier.
#include "tessera/runtime/offload/nvme_store.hpp"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <fstream>
#include <numeric>

#include "tessera/core/setting_error.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/meta/meta_device.hpp"
#include "tessera/runtime/offload/offload_file.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

using testing::ScratchDir;

NvmeSettings settings_in(const std::filesystem::path& dir, std::int64_t block = 1000) {
  NvmeSettings s;
  s.path = dir.string();
  s.block_elements = block;
  return s;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

TEST(NvmeStore, ValueRangesRoundTripAcrossChunks) {
  ScratchDir dir("nvme_store");
  for (OffloadIo io : {OffloadIo::kAuto, OffloadIo::kBuffered}) {
    auto device = make_cpu_device();
    NvmeSettings settings = settings_in(dir.path());
    settings.io = io;
    NvmeStore store(*device, settings, 3);
    // 2500 f32 in chunks of 1000 (4000 bytes, padded to 4096), then 10 scale values per 250 elements.
    FileExtent values = store.reserve(2500, DType::kF32, 1, MemoryCategory::kOptimizerState);
    FileExtent scales = store.reserve(10, DType::kF32, 250, MemoryCategory::kOptimizerState);
    EXPECT_EQ(values.chunks(), 3);
    EXPECT_EQ(values.chunk_stride, 4096);
    EXPECT_EQ(values.chunk_values(2), 500);
    EXPECT_EQ(scales.values_per_chunk, 4);
    EXPECT_EQ(device->memory(MemoryKind::kNvme).current(MemoryCategory::kOptimizerState),
              values.file_bytes() + scales.file_bytes());
    store.allocate_file();
    const std::filesystem::path file = dir / OffloadFile::file_name(3);
    ASSERT_TRUE(std::filesystem::exists(file));
    if (io == OffloadIo::kBuffered) {
      EXPECT_NE(store.describe().find("pread/pwrite"), std::string::npos) << store.describe();
    } else {
      EXPECT_NE(store.describe().find("io_uring"), std::string::npos) << joined(store.notices());
    }

    std::vector<float> all(2500);
    std::iota(all.begin(), all.end(), 1.0f);
    store.write(values, 0, 2500, all.data());
    // Overwrite a range that starts and ends inside chunks: its neighbours must survive.
    std::vector<float> patch(1300, -7.0f);
    store.write(values, 600, 1300, patch.data());
    std::copy(patch.begin(), patch.end(), all.begin() + 600);
    std::vector<float> back(2500, 0.0f);
    store.read(values, 0, 2500, back.data());
    EXPECT_EQ(back, all) << offload_io_name(io);
    std::vector<float> middle(5);
    store.read(values, 1898, 5, middle.data());
    EXPECT_EQ(middle, std::vector<float>(all.begin() + 1898, all.begin() + 1903));

    // The scales are their own extent: untouched by the values' writes, zero until written.
    std::vector<float> s(10, 1.0f);
    store.read(scales, 0, 10, s.data());
    EXPECT_EQ(s, std::vector<float>(10, 0.0f));
  }
  EXPECT_FALSE(std::filesystem::exists(dir / OffloadFile::file_name(3))) << "the file outlived its store";
}

TEST(NvmeStore, StaleFileIsReplacedAndLiveOneRefused) {
  ScratchDir dir("nvme_stale");
  auto device = make_cpu_device();
  {
    std::ofstream stale(dir / OffloadFile::file_name(0), std::ios::binary);
    stale << std::string(10000, 'x');  // as left by a killed run
  }
  NvmeStore store(*device, settings_in(dir.path()), 0);
  const std::string notes = joined(store.notices());
  EXPECT_NE(notes.find("earlier run"), std::string::npos) << notes;
  FileExtent e = store.reserve(100, DType::kF32, 1, MemoryCategory::kOptimizerState);
  store.allocate_file();
  std::vector<float> v(100, 1.0f);
  store.read(e, 0, 100, v.data());
  EXPECT_EQ(v, std::vector<float>(100, 0.0f)) << "stale bytes were read as state";
  try {
    NvmeStore second(*device, settings_in(dir.path()), 0);
    FAIL() << "a second store took a file in use";
  } catch (const SettingError& error) {
    EXPECT_EQ(error.setting(), "offload.path");
    EXPECT_NE(std::string(error.what()).find("in use"), std::string::npos) << error.what();
  }
  NvmeStore other_rank(*device, settings_in(dir.path()), 1);  // ranks never collide
}

TEST(NvmeStore, UnusableDirectoriesAreRefusedByName) {
  ScratchDir dir("nvme_refused");
  auto device = make_cpu_device();
  auto refusal = [&](const std::filesystem::path& path) -> std::string {
    try {
      NvmeStore store(*device, settings_in(path), 0);
      store.reserve(1 << 20, DType::kF32, 1, MemoryCategory::kOptimizerState);
      store.allocate_file();
    } catch (const SettingError& error) {
      EXPECT_EQ(error.setting(), "offload.path") << error.what();
      return error.what();
    }
    return "";
  };
  EXPECT_NE(refusal(dir / "missing").find("does not exist"), std::string::npos);
  std::ofstream(dir / "plain_file") << "x";
  EXPECT_NE(refusal(dir / "plain_file").find("not a directory"), std::string::npos);
  EXPECT_NE(refusal("").find("needs a directory"), std::string::npos);

  const std::string why = dir.mount_tmpfs("small", 1 << 20);
  if (!why.empty()) GTEST_SKIP() << why;
  const std::string small = refusal(dir / "small");                          // 4 MiB of state on a 1 MiB file system
  EXPECT_NE(small.find("needs 4296704 bytes"), std::string::npos) << small;  // 1049 chunks of 4 KiB
  EXPECT_NE(small.find("1048576 bytes (1.00 MiB) free"), std::string::npos) << small;
  ASSERT_EQ(dir.mount_tmpfs("read_only", 1 << 20, true), "");
  EXPECT_NE(refusal(dir / "read_only").find("cannot create"), std::string::npos);
}

TEST(NvmeStore, MetaDeviceBooksWithoutFiles) {
  auto device = make_meta_device();
  NvmeStore store(*device, settings_in("/nonexistent/never/created"), 0);
  const FileExtent e = store.reserve(5000, DType::kBF16, 1, MemoryCategory::kParameters);
  store.allocate_file();
  EXPECT_FALSE(store.holds_data());
  EXPECT_EQ(device->memory(MemoryKind::kNvme).current(MemoryCategory::kParameters), e.file_bytes());
}

}  // namespace
TEST(NvmeStore, ADirectoryInMemoryIsSaidToTakeHostMemory) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  auto device = make_cpu_device();
  const std::filesystem::path dir = "/dev/shm/tessera_offload_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  struct Remove {
    std::filesystem::path path;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } remove{dir};
  std::string notes;
  {
    NvmeStore store(*device, settings_in(dir), 0);
    notes = joined(store.notices());
  }
  EXPECT_NE(notes.find(dir.string() + " is on tmpfs (memory)"), std::string::npos) << notes;
  EXPECT_NE(notes.find("offload.path"), std::string::npos) << notes;
  ScratchDir disk("nvme_disk");  // the suite's temporary directory: on disk here, where it is not tmpfs
  NvmeStore on_disk(*device, settings_in(disk.path()), 0);
  const bool disk_in_memory = joined(on_disk.notices()).find("(memory)") != std::string::npos;
  struct statfs fs {};
  ASSERT_EQ(::statfs(disk.path().c_str(), &fs), 0);
  EXPECT_EQ(disk_in_memory, fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) << joined(on_disk.notices());
}

}  // namespace tessera
