// The plots of a metrics file (training/metrics_log.hpp), written beside it as SVG line charts
// (core/svg/line_chart_svg.hpp): FILE's name with its extension replaced —
//   run/metrics.jsonl -> run/metrics.loss.svg        training loss and validation loss over steps
//                        run/metrics.throughput.svg  tokens/s over steps
// Drawn from the whole file, so a resumed run's plots show the steps before the resume too, with a
// marker at each resume labelled with the rank count, ZeRO stage and global batch it resumed with.
// Every value is a point (a single validation shows); tokens/s is drawn from zero, the loss on an
// axis fitted to its values.
#pragma once

#include <string>

namespace tessera {

struct MetricsPlotFiles {
  std::string loss, throughput;
};

// The two paths for `metrics_path`.
MetricsPlotFiles metrics_plot_files(const std::string& metrics_path);

// Reads `metrics_path` and writes both plots. Throws std::runtime_error naming a file it cannot
// read or write.
MetricsPlotFiles write_metrics_plots(const std::string& metrics_path);

}  // namespace tessera
