// RunningBand: mean and population spread over a sliding window.
#include "tessera/training/running_band.hpp"

#include <algorithm>
#include <cmath>

namespace tessera {

double RunningBand::mean() const {
  if (values_.empty()) return 0.0;
  double sum = 0.0;
  for (double v : values_) sum += v;
  return sum / static_cast<double>(values_.size());
}

double RunningBand::deviations(double x, double min_spread_fraction) const {
  if (values_.empty()) return 0.0;
  const double m = mean();
  double squares = 0.0;
  for (double v : values_) squares += (v - m) * (v - m);
  const double spread = std::max(std::sqrt(squares / static_cast<double>(values_.size())), min_spread_fraction * std::fabs(m));
  return spread > 0.0 ? (x - m) / spread : 0.0;
}

void RunningBand::accept(double x) {
  values_.push_back(x);
  if (static_cast<int>(values_.size()) > window_) values_.pop_front();
}

}  // namespace tessera
