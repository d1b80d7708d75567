// FileReadahead: byte ranges named ahead are brought into the page cache by the background thread
// while nothing reads them — checked with mincore on a file whose pages were dropped first — ranges
// not named stay out, a file that cannot be opened is ignored, and destruction stops a long queue
// at once. Skips where the page cache cannot be dropped (e.g. a tmpfs temporary directory).
#include "checkpointing/file_readahead.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/checkpointing/page_cache_support.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing {
namespace {

TEST(FileReadahead, BringsTheNamedRangesIntoThePageCache) {
  ScratchDir dir("readahead");
  const std::string path = (dir / "data.bin").string();
  write_file(path, 16 * kMiB);
  drop_pages(path);
  const Residency before = residency(path, 0, 16 * kMiB);
  if (before.resident * 10 > before.pages) {
    GTEST_SKIP() << "the page cache cannot be dropped here (" << before.resident << " of " << before.pages
                 << " pages stay resident)";
  }
  {
    FileReadahead readahead(path);
    readahead.add(2 * kMiB, 2 * kMiB);
    readahead.add(4 * kMiB, 2 * kMiB);  // touches the previous range: merged
    readahead.add(10 * kMiB, 2 * kMiB);
    EXPECT_TRUE(wait_resident(path, 2 * kMiB, 4 * kMiB, 20.0))
        << residency(path, 2 * kMiB, 4 * kMiB).resident << " of " << residency(path, 2 * kMiB, 4 * kMiB).pages
        << " pages of [2, 6) MiB resident";
    EXPECT_TRUE(wait_resident(path, 10 * kMiB, 2 * kMiB, 20.0))
        << residency(path, 10 * kMiB, 2 * kMiB).resident << " pages of [10, 12) MiB resident";
    EXPECT_EQ(readahead.issued_bytes(), 6 * kMiB);
  }
  const Residency untouched = residency(path, 13 * kMiB, 3 * kMiB);
  EXPECT_LT(untouched.resident * 2, untouched.pages)
      << untouched.resident << " of " << untouched.pages << " pages of [13, 16) MiB, which nothing asked for";
}

TEST(FileReadahead, AMissingFileIsIgnored) {
  FileReadahead readahead("/nonexistent/tessera/readahead.bin");
  readahead.add(0, kMiB);
  EXPECT_EQ(readahead.issued_bytes(), 0);
}

TEST(FileReadahead, DestructionStopsALongQueue) {
  ScratchDir dir("readahead_stop");
  const std::string path = (dir / "small.bin").string();
  write_file(path, kMiB);
  const auto t0 = std::chrono::steady_clock::now();
  {
    FileReadahead readahead(path);
    readahead.add(0, std::int64_t{1} << 50);  // a petabyte: millions of pieces if it never stopped
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 5.0) << "the destructor waited for the whole queue";
}

}  // namespace
}  // namespace tessera::testing
