// StepReporter: what the training loop (TrainingRun) tells the user, out of the loop itself — the progress
// (training/progress_display.hpp: a live line on a terminal, time-stamped lines in a log), the
// logged steps with tokens/s, MFU and peak memory over all ranks, validation losses, checkpoint
// saves, the metrics file (training/metrics_log.hpp) with its plots at the end, and the same
// quantities as TensorBoard event files (training/tensorboard_writer.hpp).
//
// Every rank constructs one and calls step_done and validation at the same steps (a logged step
// takes the slowest rank's time and the largest peak: collectives); rank 0 prints and writes.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tessera/comm/communicator.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/memory_profiler.hpp"
#include "tessera/training/eta.hpp"
#include "tessera/training/metrics_log.hpp"
#include "tessera/training/progress_display.hpp"
#include "tessera/training/tensorboard_writer.hpp"
#include "tessera/training/step_result.hpp"

namespace tessera {

struct StepReporterConfig {
  std::int64_t total_steps = 0;
  std::int64_t log_every = 1;
  std::int64_t tokens_per_step = 0;             // all ranks
  double flops_per_token = 0.0;                 // training FLOPs, for MFU
  double ceiling_gflops = 0.0;                  // one rank's measured GEMM ceiling
  bool mfu_shared_cores = false;                // ranks x threads exceed a node's cores: MFU shows as n/a
  std::string metrics_path;                     // "": no metrics file
  std::string tensorboard_dir;                  // "": no TensorBoard event files
  std::string effective_config;                 // written to the metrics file as its run starts
  std::string environment_json;                 // the environment report (run/environment_report.hpp)
  std::optional<std::int64_t> resumed_at;       // the step a resumed run continues from
  int ranks = 1, zero_stage = 0;                // the run's shape, recorded where it resumed
  std::int64_t global_batch = 0;
  ProgressStyle style = ProgressStyle::kPlain;  // rank 0's (the other ranks draw nothing)
};

class StepReporter {
 public:
  // Collective only in what its methods do. `profiler` (may be null): the memory figures come from
  // it when --memory-profile samples every phase. Rank 0 opens the metrics file and the event file;
  // one that cannot be written throws (a SettingError naming run.tensorboard_dir for the latter).
  StepReporter(const StepReporterConfig& config, Communicator& world, Device& device, const MemoryProfiler* profiler);

  // After every step (all ranks): `step` steps are complete; the step took `seconds` on this rank.
  // A logged step (the first, every log_every-th, the last) is collective.
  void step_done(std::int64_t step, const StepResult& result, float lr, double seconds, std::int64_t skipped_total);
  // A validation loss measured after `step` steps.
  void validation(std::int64_t step, float loss);
  // A line of the loop (rank 0 prints it; others ignore it).
  void line(const std::string& text);
  // Checkpoints committed (TrainingCheckpointer::take_committed_saves), logged with their bytes and
  // time; `async`: written in the background.
  void saves(const std::vector<SaveResult>& committed, bool async);
  // The run went back to the checkpoint of `step`: the metrics after it are dropped.
  void went_back(std::int64_t step);
  // Ends the progress display and (rank 0, with a metrics file) writes the plots; returns their paths.
  std::vector<std::string> finish();

 private:
  double elapsed() const;

  StepReporterConfig config_;
  Communicator& world_;
  Device& device_;
  const MemoryProfiler* profiler_;
  bool root_;
  ProgressDisplay display_;
  EtaEstimator eta_;
  std::optional<MetricsLog> metrics_;
  std::optional<TensorBoardWriter> tensorboard_;
  std::chrono::steady_clock::time_point start_;
  double window_seconds_ = 0.0;  // since the last logged step
  std::int64_t window_steps_ = 0;
};

}  // namespace tessera
