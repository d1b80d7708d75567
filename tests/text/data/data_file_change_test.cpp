// A data file changed while a run reads it (TokenFile::check_unchanged, text/data/file_identity.hpp):
// replaced by tessera_prepare re-run into the same path (a new file renamed over it), truncated in
// place, or rewritten in place with the same size but another header — the next read throws naming
// the file and what changed, and reads nothing (a truncated mapping would otherwise end the process
// with SIGBUS). A file only touched (same bytes) reads on.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/text/data/sample_loader.hpp"
#include "tessera/text/data/token_dataset.hpp"
#include "tessera/text/data/token_file.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

std::vector<std::int32_t> counting_tokens(int count, int offset = 0) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) t[static_cast<std::size_t>(i)] = (i + offset) % 200;
  return t;
}

// Reads tokens [0, 16) of `dataset` and returns the exception's message ("" when it read).
std::string read_message(const TokenDataset& dataset) {
  std::vector<std::int32_t> out(16);
  try {
    dataset.read(0, 16, out.data());
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

void expect_stopped(const std::string& message, const std::string& path, const std::string& change) {
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("changed while the run was reading it"), std::string::npos) << message;
  EXPECT_NE(message.find(change), std::string::npos) << message;
}

TEST(DataFileChange, ReplacedTruncatedOrRewrittenStopsTheNextRead) {
  testing::ScratchDir dir("data_change");
  const std::string path = (dir / "tokens.bin").string();
  write_token_file(path, counting_tokens(4096));

  {  // replaced: a new file renamed over the path, as tessera_prepare writes
    TokenDataset dataset(path);
    EXPECT_EQ(read_message(dataset), "");
    write_token_file(path, counting_tokens(4096, 7));
    expect_stopped(read_message(dataset), path, "replaced by another file");
  }
  {  // truncated in place
    TokenDataset dataset(path);
    EXPECT_EQ(read_message(dataset), "");
    ASSERT_EQ(::truncate(path.c_str(), 2048), 0);
    expect_stopped(read_message(dataset), path, "size changed from 9216 to 2048 bytes");
  }
  write_token_file(path, counting_tokens(4096));
  {  // rewritten in place, same size: the header's token count is the only change
    TokenDataset dataset(path);
    EXPECT_EQ(read_message(dataset), "");
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    const std::int32_t other_count = 4095;
    f.seekp(8);
    f.write(reinterpret_cast<const char*>(&other_count), sizeof other_count);
    f.close();
    struct timespec later[2] = {{0, UTIME_OMIT}, {0, 0}};
    ASSERT_EQ(::clock_gettime(CLOCK_REALTIME, &later[1]), 0);
    later[1].tv_sec += 5;  // a modification time the check cannot miss on coarse clocks
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), later, 0), 0);
    expect_stopped(read_message(dataset), path, "rewritten (its header changed)");
  }
  write_token_file(path, counting_tokens(4096));
  {  // touched only: the same bytes read on
    TokenDataset dataset(path);
    struct timespec later[2] = {{0, UTIME_OMIT}, {0, 0}};
    ASSERT_EQ(::clock_gettime(CLOCK_REALTIME, &later[1]), 0);
    later[1].tv_sec += 5;
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), later, 0), 0);
    EXPECT_EQ(read_message(dataset), "");
  }
}

TEST(DataFileChange, TheSampleLoaderStopsNamingTheFile) {
  testing::ScratchDir dir("data_change_loader");
  const std::string path = (dir / "tokens.bin").string();
  write_token_file(path, counting_tokens(4096));
  TokenDataset dataset(path);
  SampleLoader loader(dataset, 16, /*seed=*/1);
  std::vector<std::int32_t> in(32), tg(32);
  loader.batch(0, 2, in.data(), tg.data());
  ::unlink(path.c_str());
  try {
    loader.batch(2, 2, in.data(), tg.data());
    FAIL() << "a removed data file was read on";
  } catch (const std::runtime_error& e) {
    expect_stopped(e.what(), path, "it was removed");
  }
}

}  // namespace
}  // namespace tessera
