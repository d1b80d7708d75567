// Page-cache helpers for the readahead tests: files of known bytes, dropping a file's pages, and
// counting which of its pages are resident (mincore).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace tessera::testing {

inline constexpr std::int64_t kMiB = std::int64_t{1} << 20;

inline void write_file(const std::string& path, std::int64_t bytes) {
  std::vector<char> block(static_cast<std::size_t>(kMiB));
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 131 + 7);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << path;
  for (std::int64_t done = 0; done < bytes; done += kMiB) {
    ASSERT_EQ(::write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
  }
  ::fsync(fd);
  ::close(fd);
}

inline void drop_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Pages of [offset, offset + bytes) of `path` in the page cache, and pages in the range.
struct Residency {
  std::int64_t resident = 0, pages = 0;
  bool all() const { return resident == pages; }
};

inline Residency residency(const std::string& path, std::int64_t offset, std::int64_t bytes) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const int fd = ::open(path.c_str(), O_RDONLY);
  Residency r;
  if (fd < 0) return r;
  const std::int64_t first = offset / page * page, end = offset + bytes;
  void* map = ::mmap(nullptr, static_cast<std::size_t>(end - first), PROT_READ, MAP_SHARED, fd, first);
  ::close(fd);
  if (map == MAP_FAILED) return r;
  std::vector<unsigned char> vec(static_cast<std::size_t>((end - first + page - 1) / page));
  if (::mincore(map, static_cast<std::size_t>(end - first), vec.data()) == 0) {
    r.pages = static_cast<std::int64_t>(vec.size());
    for (unsigned char v : vec) r.resident += v & 1;
  }
  ::munmap(map, static_cast<std::size_t>(end - first));
  return r;
}

// Polls until the range is all in the page cache (true) or `seconds` pass (false).
inline bool wait_resident(const std::string& path, std::int64_t offset, std::int64_t bytes, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (residency(path, offset, bytes).all()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return residency(path, offset, bytes).all();
}

}  // namespace tessera::testing
