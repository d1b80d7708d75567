// MemoryProfiler: where memory went during training steps. It samples a MemoryTracker at phase
// boundaries — the sharding engine calls it at the end of every unit's forward and backward, after
// the loss and at the end of the step (ShardedEngine::set_phase_observer) — and keeps, per sample,
// the bytes allocated per category at that moment and the peak per category since the previous
// sample. From the samples it writes a timeline (CSV), an SVG stacked-area chart of one step
// (memory_timeline_svg.hpp), and checks for leaks: the bytes allocated at the same phase of two
// steps must not grow.
//
// The profiler resets the tracker's peaks at every sample (that is how it sees the peak inside each
// phase): while profiling, MemoryTracker::peak() covers only the time since the last sample; read
// a step's peaks from step_peaks(). Not thread-safe: call it from the training thread.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "tessera/runtime/memory_tracker.hpp"

namespace tessera {

struct MemorySample {
  std::int64_t step = 0;  // as given to begin_step()
  int index = 0;          // position within the step; 0 is "begin" when begin_step() was called
  std::string phase;      // "begin", "forward h.3", "loss", "backward embed", "step", ...
  // current: bytes allocated at the end of the phase; peak: the highest bytes during the phase
  // (since the previous sample); current_total / peak_total likewise for all categories together.
  MemorySnapshot memory;
};

// Growth between the same phase of two steps.
struct MemoryLeak {
  std::string phase;
  int index = 0;
  std::int64_t first_step = 0, later_step = 0;
  MemorySnapshot first, later;  // the two samples' memory

  std::int64_t growth() const { return later.current_total - first.current_total; }
  // "phase 'backward h.1' (#7): 1.50 MiB more allocated at step 9 than at step 1 (activations +1.50 MiB)"
  std::string message() const;
};

class MemoryProfiler {
 public:
  // `tracker` must outlive the profiler.
  explicit MemoryProfiler(MemoryTracker& tracker);

  // Starts step `step`: samples phase "begin" (the memory the step starts from).
  void begin_step(std::int64_t step);
  // Samples the tracker at the end of `phase`.
  void on_phase(const std::string& phase);

  std::vector<MemorySample> samples_of(std::int64_t step) const;
  std::vector<std::int64_t> steps() const;  // step numbers that have samples, in order
  // The peak per category and the simultaneous peak over step `step` (its "begin" sample excluded),
  // and the bytes allocated at its end.
  MemorySnapshot step_peaks(std::int64_t step) const;
  // The peaks over every sample so far ("begin" samples included): what MemoryTracker::peak() would
  // say had the profiler not reset it.
  MemorySnapshot overall_peaks() const;
  // memory_summary()'s table for overall_peaks(): bytes now and the peak, per category and in total.
  std::string summary() const;

  // Phases present in both steps (matched by position and name) where the bytes allocated grew by
  // more than `tolerance_bytes`.
  std::vector<MemoryLeak> check_leaks(std::int64_t first_step, std::int64_t later_step,
                                      std::int64_t tolerance_bytes = 0) const;

  // One line per sample: step,index,phase, then the current bytes of each category and the total,
  // then the phase peak of each category and the total.
  void write_csv(std::ostream& out) const;
  void write_csv(const std::string& path) const;  // throws std::runtime_error naming the path

 private:
  MemoryTracker& tracker_;
  std::vector<MemorySample> samples_;
  std::int64_t step_ = 0;
  int index_ = 0;
};

// The CSV header line write_csv() starts with (no newline).
std::string memory_timeline_csv_header();

// Writes the profile of one rank to `dir` (created if missing): memory_rank<R>.csv with every
// sample, and memory_rank<R>_step<S>.svg, the stacked-area chart of step `svg_step`. Returns the
// paths written. Throws std::runtime_error naming a path it cannot write.
std::vector<std::string> write_memory_profile(const MemoryProfiler& profiler, const std::string& dir, int rank,
                                              std::int64_t svg_step);

}  // namespace tessera
