// stop_signal_line: "stop signal: saved step N to DIR, stopping" or "... nothing was saved ...".
#include "stop_report.hpp"

namespace tessera {

std::string stop_signal_line(const std::string& checkpoint_dir, std::int64_t step, std::int64_t steps) {
  const std::string when = step >= steps ? " (after the last step)" : "";
  if (checkpoint_dir.empty()) {
    return "stop signal" + when + ": stopping after step " + std::to_string(step) +
           "; nothing was saved (no --checkpoint-dir)";
  }
  return "stop signal" + when + ": saved step " + std::to_string(step) + " to " + checkpoint_dir + ", stopping";
}

}  // namespace tessera
