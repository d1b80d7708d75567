// MetricsLog: a run's metrics as JSON lines (docs/METRICS.md), one object per logged step
// ("kind": "train"), one per validation ("kind": "val") and one where a resumed run starts ("kind":
// "resume": its step, rank count, ZeRO stage, global batch and the logged steps it trains again),
// each flushed as it is written so a killed run keeps what it logged. Written with nlohmann-json on
// rank 0.
//
// A fresh run starts the file empty. A resumed run (and one that went back to a checkpoint after
// diverging: rewind) keeps the records of the steps up to the step it continues from and appends
// after them: records of later steps — written by the run that went on past the checkpoint — are
// dropped when the file is rewritten (to a temporary file renamed over it), and on a resume so is
// the validation record of the resume step itself, which the resumed run measures again. Resume
// records at the resume step stay: a run restarted twice from one checkpoint shows both restarts. Lines that
// do not parse (the torn last line of a killed run) are dropped with a warning. A resumed run's
// "elapsed_s" continues from the last record kept (a run that goes back to a checkpoint counts the
// time it spent on the dropped steps: time went by).
#pragma once

#include <array>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tessera/runtime/memory_category.hpp"

namespace tessera {

struct TrainRecord {
  std::int64_t step = 0;  // steps completed
  float loss = 0.0f;      // non-finite: written as null
  float lr = 0.0f;
  double grad_norm = 0.0;
  bool skipped = false;
  double tokens_per_s = 0.0;
  double mfu = 0.0;                                                                // fraction
  std::array<std::int64_t, kMemoryCategoryCount> memory_current{}, memory_peak{};  // bytes by category
  std::int64_t memory_current_total = 0, memory_peak_total = 0;
  std::int64_t skipped_steps = 0;  // skipped so far in this run
  double elapsed_s = 0.0;
};

struct ValidationRecord {
  std::int64_t step = 0;
  float val_loss = 0.0f;
  double elapsed_s = 0.0;
};

// Where a resumed run started, and with what shape.
struct ResumeRecord {
  std::int64_t step = 0;  // the step it continued from
  int ranks = 0;
  int zero_stage = 0;
  std::int64_t global_batch = 0;  // sequences per step
  double elapsed_s = 0.0;
  // Logged steps past `step` that the interrupted run had reached and this run trains again (the
  // highest train record dropped when the file was rewritten, minus `step`; 0 when none).
  std::int64_t steps_redone = 0;
};

// "2 ranks, ZeRO-1, global batch 16": the shape a run resumed with, as plots and TensorBoard label it.
std::string resume_label(const ResumeRecord& record);

// What a metrics file holds, series by series (for plots and tests).
struct MetricsSeries {
  std::vector<double> train_step, train_loss, tokens_per_s;
  std::vector<double> val_step, val_loss;
  std::vector<ResumeRecord> resumes;  // in file order
  int unreadable_lines = 0;           // lines that did not parse, left out
};

class MetricsLog {
 public:
  // Opens `path` for a fresh run (continue_from: nullopt) or a run continuing after step
  // *continue_from (see above). Throws std::runtime_error naming the path when it cannot write it.
  MetricsLog(std::string path, std::optional<std::int64_t> continue_from);

  void append(const TrainRecord& record);
  void append(const ValidationRecord& record);
  void append(const ResumeRecord& record);
  // The settings of a run starting (or resuming) at `step`: {"kind": "config", "step": step,
  // "effective_config": text, "environment": report} (the report: a JSON object, "" for none).
  void append_config(std::int64_t step, const std::string& effective_config, const std::string& environment_json);
  // The run went back to step `step` (a checkpoint reloaded): rewrites the file as for a resume, but
  // keeps the validation of `step` (the run does not measure it again).
  void rewind(std::int64_t step);

  const std::string& path() const { return path_; }
  // The elapsed_s of the last record kept when the file was opened (0 for a fresh run).
  double elapsed_before() const { return elapsed_before_; }
  // The highest step of a train record the earlier run wrote past the step this run continues
  // from, dropped when the file was opened (0 when none): what a resume trains again.
  std::int64_t last_step_dropped() const { return last_step_dropped_; }

 private:
  struct KeptRecords {
    double elapsed = 0.0;                      // the last kept record's elapsed_s
    std::int64_t last_train_step_dropped = 0;  // 0: none dropped
  };
  KeptRecords keep_until(std::int64_t step, bool drop_validation_at_step);
  void write_line(const std::string& line);

  std::string path_;
  std::ofstream out_;
  double elapsed_before_ = 0.0;
  std::int64_t last_step_dropped_ = 0;
};

// Reads every record of a metrics file. Throws std::runtime_error when it cannot be opened.
MetricsSeries read_metrics_file(const std::string& path);

}  // namespace tessera
