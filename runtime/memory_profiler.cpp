// MemoryProfiler: phase samples, step peaks, leak check and the CSV timeline.
#include "tessera/runtime/memory_profiler.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <stdexcept>

#include "tessera/runtime/memory_timeline_svg.hpp"

namespace tessera {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string column_name(MemoryCategory c) {
  std::string name = memory_category_name(c);
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

std::string signed_bytes(std::int64_t bytes) {
  std::string s = bytes >= 0 ? "+" : "-";
  s += format_bytes(bytes >= 0 ? bytes : -bytes);
  return s;
}

}  // namespace

std::string MemoryLeak::message() const {
  std::string s = "phase '" + phase + "' (#" + std::to_string(index) + "): " + format_bytes(growth()) +
                  " more allocated at step " + std::to_string(later_step) + " than at step " +
                  std::to_string(first_step) + " (";
  bool first_item = true;
  for (MemoryCategory c : kAllMemoryCategories) {
    const std::int64_t d = later.current_of(c) - first.current_of(c);
    if (d == 0) continue;
    s += (first_item ? "" : ", ") + std::string(memory_category_name(c)) + " " + signed_bytes(d);
    first_item = false;
  }
  return s + ")";
}

MemoryProfiler::MemoryProfiler(MemoryTracker& tracker) : tracker_(tracker) {}

void MemoryProfiler::begin_step(std::int64_t step) {
  step_ = step;
  index_ = 0;
  on_phase("begin");
}

void MemoryProfiler::on_phase(const std::string& phase) {
  samples_.push_back({step_, index_++, phase, tracker_.snapshot()});
  tracker_.reset_peaks();
}

std::vector<MemorySample> MemoryProfiler::samples_of(std::int64_t step) const {
  std::vector<MemorySample> out;
  for (const MemorySample& s : samples_) {
    if (s.step == step) out.push_back(s);
  }
  return out;
}

std::vector<std::int64_t> MemoryProfiler::steps() const {
  std::vector<std::int64_t> out;
  for (const MemorySample& s : samples_) {
    if (out.empty() || out.back() != s.step) out.push_back(s.step);
  }
  return out;
}

MemorySnapshot MemoryProfiler::step_peaks(std::int64_t step) const {
  MemorySnapshot result;
  bool any = false;
  for (const MemorySample& s : samples_) {
    if (s.step != step || s.phase == "begin") continue;
    for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) result.peak[i] = std::max(result.peak[i], s.memory.peak[i]);
    result.peak_total = std::max(result.peak_total, s.memory.peak_total);
    result.current = s.memory.current;
    result.current_total = s.memory.current_total;
    any = true;
  }
  if (!any) throw std::invalid_argument("MemoryProfiler: no samples of step " + std::to_string(step));
  return result;
}

MemorySnapshot MemoryProfiler::overall_peaks() const {
  MemorySnapshot result;
  for (const MemorySample& s : samples_) {
    for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) result.peak[i] = std::max(result.peak[i], s.memory.peak[i]);
    result.peak_total = std::max(result.peak_total, s.memory.peak_total);
    result.current = s.memory.current;
    result.current_total = s.memory.current_total;
  }
  return result;
}

std::string MemoryProfiler::summary() const { return memory_summary(overall_peaks()); }

std::vector<MemoryLeak> MemoryProfiler::check_leaks(std::int64_t first_step, std::int64_t later_step,
                                                    std::int64_t tolerance_bytes) const {
  const auto a = samples_of(first_step), b = samples_of(later_step);
  std::vector<MemoryLeak> leaks;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].phase != b[i].phase) break;  // the steps ran different phases from here on
    MemoryLeak leak{a[i].phase, a[i].index, first_step, later_step, a[i].memory, b[i].memory};
    if (leak.growth() > tolerance_bytes) leaks.push_back(leak);
  }
  return leaks;
}

std::string memory_timeline_csv_header() {
  std::string h = "step,index,phase";
  for (MemoryCategory c : kAllMemoryCategories) h.append(",").append(column_name(c)).append("_bytes");
  h += ",total_bytes";
  for (MemoryCategory c : kAllMemoryCategories) h.append(",").append(column_name(c)).append("_peak");
  return h + ",total_peak";
}

void MemoryProfiler::write_csv(std::ostream& out) const {
  out << memory_timeline_csv_header() << '\n';
  for (const MemorySample& s : samples_) {
    out << s.step << ',' << s.index << ',' << csv_field(s.phase);
    for (MemoryCategory c : kAllMemoryCategories) out << ',' << s.memory.current_of(c);
    out << ',' << s.memory.current_total;
    for (MemoryCategory c : kAllMemoryCategories) out << ',' << s.memory.peak_of(c);
    out << ',' << s.memory.peak_total << '\n';
  }
}

void MemoryProfiler::write_csv(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write the memory timeline to " + path + ": check the directory exists");
  write_csv(out);
  if (!out) throw std::runtime_error("writing the memory timeline to " + path + " failed");
}

std::vector<std::string> write_memory_profile(const MemoryProfiler& profiler, const std::string& dir, int rank,
                                              std::int64_t svg_step) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw std::runtime_error("cannot create the memory profile directory " + dir + ": " + error.message());
  char name[64];
  std::snprintf(name, sizeof name, "memory_rank%05d", rank);
  const std::string base = (std::filesystem::path(dir) / name).string();
  std::vector<std::string> written{base + ".csv"};
  profiler.write_csv(written.back());
  const auto samples = profiler.samples_of(svg_step);
  if (!samples.empty()) {
    written.push_back(base + "_step" + std::to_string(svg_step) + ".svg");
    write_memory_timeline_svg(written.back(), samples,
                              "memory of rank " + std::to_string(rank) + ", step " + std::to_string(svg_step));
  }
  return written;
}

}  // namespace tessera
