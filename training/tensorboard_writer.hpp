// TensorBoardWriter: a run's scalars as a TensorBoard event file, readable by `tensorboard --logdir
// DIR` while the run goes on (docs/METRICS.md). Each file is a sequence of TFRecord records
// (training/tfrecord.hpp) holding Events of TensorBoard's schema (training/tensorboard_event.proto,
// serialized with libprotobuf): first the file version "brain.Event:2", then one Event per logged
// step with its scalars, each record flushed as it is written.
//
// Every writer starts a new file, events.out.tfevents.<seconds since the epoch, 10 digits>.<host>
// (".1", ".2", ... appended when that name is taken), so a resumed run adds a file beside the first
// run's and TensorBoard merges them. A run that continues from step k (a resume, or a return to a
// checkpoint) writes a SessionLog START at step k + 1: TensorBoard then drops the values it read
// for steps after k, which the earlier run wrote past its checkpoint. Written on rank 0 only.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/training/metrics_log.hpp"

namespace tessera {

struct TensorBoardScalar {
  std::string tag;  // "train/loss"
  float value = 0.0f;
};

class TensorBoardWriter {
 public:
  // Creates `dir` (and its parents) when missing and a new event file in it. Throws
  // std::runtime_error naming the directory or file when it cannot.
  explicit TensorBoardWriter(const std::string& dir);

  // One event at `step` with these scalars, flushed.
  void write_scalars(std::int64_t step, const std::vector<TensorBoardScalar>& scalars);
  // A SessionLog START at `step` with `message`: the run continues here, later steps read before are stale.
  void write_start(std::int64_t step, const std::string& message);

  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& serialized_event);

  std::string path_;
  std::ofstream out_;
};

// The scalars of a metrics record, tagged as docs/METRICS.md lists them: train/loss, train/lr,
// train/grad_norm, train/skipped_steps, perf/tokens_per_s, perf/mfu, memory/current_mib,
// memory/peak_mib and memory/peak_mib/<category>; val/loss. A non-finite loss stays NaN or inf.
std::vector<TensorBoardScalar> tensorboard_scalars(const TrainRecord& record);
std::vector<TensorBoardScalar> tensorboard_scalars(const ValidationRecord& record);

}  // namespace tessera
