// RunningBand: the mean and spread of the last `window` accepted values of a series (a loss, a
// gradient norm), and how many spreads above that mean a new value stands. The spread used is at
// least a fraction of the mean (1% unless said), so a flat series does not make every wobble stand out. What the spike guard
// skips steps by, and what a checkpoint's health mark is judged by.
#pragma once

#include <cstddef>
#include <deque>

namespace tessera {

class RunningBand {
 public:
  explicit RunningBand(int window) : window_(window) {}

  // Spreads `x` lies above the mean of the window (negative below it); 0 while the window is empty.
  double deviations(double x, double min_spread_fraction = 0.01) const;
  double mean() const;
  // Adds `x`, dropping the oldest value beyond the window.
  void accept(double x);
  std::size_t size() const { return values_.size(); }

 private:
  int window_;
  std::deque<double> values_;
};

}  // namespace tessera
