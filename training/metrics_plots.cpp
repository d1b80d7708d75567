// Loss and throughput charts of a metrics file.
#include "tessera/training/metrics_plots.hpp"

#include <filesystem>

#include "tessera/core/svg/line_chart_svg.hpp"
#include "tessera/training/metrics_log.hpp"

namespace tessera {

MetricsPlotFiles metrics_plot_files(const std::string& metrics_path) {
  const std::filesystem::path p(metrics_path);
  return {std::filesystem::path(p).replace_extension(".loss.svg").string(),
          std::filesystem::path(p).replace_extension(".throughput.svg").string()};
}

MetricsPlotFiles write_metrics_plots(const std::string& metrics_path) {
  const MetricsSeries s = read_metrics_file(metrics_path);
  const MetricsPlotFiles files = metrics_plot_files(metrics_path);
  const std::string name = std::filesystem::path(metrics_path).filename().string();
  // One marker per step resumed from: restarts from the same checkpoint share it, counted, with the
  // shape of the last and the steps they trained again.
  std::vector<ChartMarker> resumes;
  for (std::size_t i = 0; i < s.resumes.size();) {
    const ResumeRecord& first = s.resumes[i];
    std::size_t end = i;
    std::int64_t redone = 0;
    for (; end < s.resumes.size() && s.resumes[end].step == first.step; ++end) redone += s.resumes[end].steps_redone;
    const std::size_t times = end - i;
    std::string label = "resumed at step " + std::to_string(first.step);
    if (times > 1) label += " (" + std::to_string(times) + " times)";
    label += ": " + resume_label(s.resumes[end - 1]);
    if (redone > 0) label += "; " + std::to_string(redone) + (redone == 1 ? " step" : " steps") + " redone";
    resumes.push_back({static_cast<double>(first.step), label});
    i = end;
  }
  // The loss axis fits the values: a loss falls within a band far above zero (cross-entropy of a
  // trained model is ~2-4 nats), and an axis from zero would flatten the curve that matters.
  LineChart loss{"loss: " + name, "step", "loss", {}, true};
  loss.series.push_back({"training loss", "#4e79a7", s.train_step, s.train_loss});
  loss.series.push_back({"validation loss", "#e15759", s.val_step, s.val_loss});
  loss.markers = resumes;
  write_line_chart_svg(files.loss, loss);
  // Throughput from zero: a drop reads at its true size.
  LineChart throughput{"throughput: " + name, "step", "tokens/s (all ranks)", {}, true};
  throughput.series.push_back({"tokens/s", "#59a14f", s.train_step, s.tokens_per_s});
  throughput.y_from_zero = true;
  throughput.markers = resumes;
  write_line_chart_svg(files.throughput, throughput);
  return files;
}

}  // namespace tessera
