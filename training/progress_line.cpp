// Progress line formatting.
#include "tessera/training/progress_line.hpp"

#include <cstdio>

#include "tessera/training/time_format.hpp"

namespace tessera {
namespace {

std::string times(const ProgressFigures& f) {
  return "elapsed " + format_duration(f.elapsed_s) + " | ETA " + (f.eta_s ? format_duration(*f.eta_s) : "?");
}

}  // namespace

std::string live_progress_line(const ProgressFigures& f) {
  char text[160];
  std::snprintf(text, sizeof text, "step %lld/%lld | loss %.4f%s | %.0f tok/s | ", static_cast<long long>(f.step),
                static_cast<long long>(f.total_steps), f.loss, f.skipped ? " (skipped)" : "", f.tokens_per_s);
  return text + times(f);
}

std::string logged_step_line(const ProgressFigures& f) {
  char text[256];
  std::snprintf(text, sizeof text,
                "step %5lld/%lld | loss %.4f | lr %.2e | grad norm %.3f%s | %7.0f tok/s | MFU %4.1f%% | "
                "peak/rank %.1f MiB | ",
                static_cast<long long>(f.step), static_cast<long long>(f.total_steps), f.loss, f.lr, f.grad_norm,
                f.skipped ? " (skipped)" : "", f.tokens_per_s, 100.0 * f.mfu, f.peak_mib);
  return text + times(f);
}

}  // namespace tessera
