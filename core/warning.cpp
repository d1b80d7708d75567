// Rank lines: formatting, the launcher's rank, and the process's current sink.
#include "tessera/core/warning.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <utility>

namespace tessera {
namespace {

std::mutex& sink_mutex() {
  static std::mutex mutex;
  return mutex;
}

RankLineSink& current_sink() {
  static RankLineSink sink;  // empty: stderr
  return sink;
}

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMIX_RANK", "PMI_RANK"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    if (end != nullptr && *end == '\0' && rank >= 0) return static_cast<int>(rank);
  }
  return 0;
}

void write_stderr(const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(2, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nobody reads stderr: nothing else to do with the line
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::string rank_prefix(int rank) {
  return "rank " + std::to_string(rank == kLauncherRank ? launcher_rank() : rank) + ": ";
}

void emit(const std::string& line) {
  std::lock_guard lock(sink_mutex());
  if (current_sink()) {
    current_sink()(line);
  } else {
    write_stderr(line + "\n");
  }
}

}  // namespace

std::string warning_line(int rank, std::string_view message) {
  return rank_prefix(rank) + "warning: " + std::string(message);
}

void warn(int rank, std::string_view message) { emit(warning_line(rank, message)); }

void print_rank_notice(int rank, std::string_view message) { emit(rank_prefix(rank) + std::string(message)); }

ScopedRankLineSink::ScopedRankLineSink(RankLineSink sink) {
  std::lock_guard lock(sink_mutex());
  previous_ = std::exchange(current_sink(), std::move(sink));
}

ScopedRankLineSink::~ScopedRankLineSink() {
  std::lock_guard lock(sink_mutex());
  current_sink() = std::move(previous_);
}

}  // namespace tessera
