// Progress line formatting: fields in order, the least needed left out while the line is too wide.
#include "tessera/training/progress_line.hpp"

#include <cstdio>
#include <vector>

#include "tessera/training/time_format.hpp"

namespace tessera {
namespace {

struct Field {
  std::string text;
  int keep = 0;  // the lowest is left out first
};

std::string format(const char* pattern, double a, double b = 0.0) {
  char text[96];
  std::snprintf(text, sizeof text, pattern, a, b);
  return text;
}

// The fields joined two spaces apart, leaving out the lowest `keep` ones until the line fits in
// kProgressLineWidth with the time of day in front.
std::string fit(std::vector<Field> fields) {
  const std::size_t room = kProgressLineWidth - kTimeOfDayWidth;
  while (true) {
    std::string line;
    for (const Field& f : fields) {
      if (!line.empty()) line += "  ";
      line += f.text;
    }
    std::size_t lowest = fields.size();
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].keep > 0 && (lowest == fields.size() || fields[i].keep < fields[lowest].keep)) lowest = i;
    }
    if (line.size() <= room || lowest == fields.size()) return line.size() <= room ? line : line.substr(0, room);
    fields.erase(fields.begin() + static_cast<std::ptrdiff_t>(lowest));
  }
}

std::string step_field(const ProgressFigures& f, const char* pattern) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, static_cast<long long>(f.step), static_cast<long long>(f.total_steps));
  return text;
}

std::string loss_field(const ProgressFigures& f) { return format("loss %.4f", f.loss) + (f.skipped ? " (skipped)" : ""); }
std::string eta_field(const ProgressFigures& f) { return "ETA " + (f.eta_s ? format_duration(*f.eta_s) : "?"); }

}  // namespace

std::string live_progress_line(const ProgressFigures& f) {
  return fit({{step_field(f, "step %lld/%lld"), 0},
              {loss_field(f), 0},
              {format("%.0f tok/s", f.tokens_per_s), 3},
              {"elapsed " + format_duration(f.elapsed_s), 1},
              {eta_field(f), 2}});
}

std::string logged_step_line(const ProgressFigures& f) {
  return fit({{step_field(f, "step %5lld/%lld"), 0},
              {loss_field(f), 0},
              {format("lr %.1e", f.lr), 7},
              {format("gnorm %.3f", f.grad_norm), 6},
              {format("%.0f tok/s", f.tokens_per_s), 5},
              {f.mfu_shared_cores ? std::string("MFU n/a") : format("MFU %.1f%%", 100.0 * f.mfu), 4},
              {eta_field(f), 3}});
}

}  // namespace tessera
