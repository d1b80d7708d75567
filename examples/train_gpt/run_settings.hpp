// train_gpt's options as the library's settings — the engine's ShardingConfig, the checkpointer's
// CheckpointOptions, the training loop's TrainingRunOptions, the planner's PlanConfig, the progress
// style — and the pre-flight memory check.
#pragma once

#include "tessera/checkpointing/training_checkpointer.hpp"
#include "tessera/comm/communicator.hpp"
#include "tessera/launch/rank_info.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/planning/plan_config.hpp"
#include "tessera/precision/mixed_precision.hpp"
#include "tessera/run/training_run.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/sharding/sharding_config.hpp"
#include "tessera/training/batch_plan.hpp"
#include "tessera/training/progress_display.hpp"
#include "train_options.hpp"

namespace tessera {

// The two-level communicator over `world` (comm/hierarchical/) when the job spans nodes with 2 or
// more ranks on each and --collectives is not flat; null otherwise. Collective over `world`.
// Throws SettingError("comm.collectives") for an unknown value, or two-level where it cannot be.
std::unique_ptr<Communicator> two_level_world(const std::string& collectives, Communicator& world,
                                              const NodeLayout& nodes);

// What --collectives auto times: the model's f32 gradient bytes, within [1 MiB, 64 MiB].
std::size_t collective_probe_bytes(Module& model);

// `nodes`: where the job's ranks run (--hybrid-group node groups by it).
// "compute: bf16 (--compute-dtype auto: bf16 on a GPU); params stored bf16 (norms f32), f32 master": the start-up
// line that says what the layers run in and why.
std::string compute_dtype_line(const MixedPrecision& precision, const std::string& flag, const Device& device);

// The engine's settings from the flags; --compute-dtype auto and --param-dtype auto are resolved for
// `device` (default_compute_dtype).
ShardingConfig sharding_config(const TrainOptions& o, const NodeLayout& nodes, const Device& device);
CheckpointOptions checkpoint_options(const TrainOptions& o);
// Everything of the loop but what depends on the model, the data and the device (run_config's model
// fields, validation, progress style, MFU basis): steps, batch, schedule, checkpoints, divergence,
// reporting, and train_gpt's names for the settings its messages mention.
TrainingRunOptions training_run_options(const TrainOptions& o, const BatchPlan& plan);

// The planner's view of this run, for the pre-flight memory check.
PlanConfig plan_config_of(const GptConfig& gpt, const ShardingConfig& s, const BatchPlan& plan,
                          const RecomputePolicy& recompute);

// Before anything is allocated: does this rank's predicted peak fit its device? Collective: every
// rank checks; the first that does not prints the prediction and the advisor's suggestion (as a
// train_gpt command line). Returns false when any rank does not fit.
bool memory_fits(const PlanConfig& config, Device& device, int local_ranks, Communicator& world);
// What the memory planner predicts for `config`'s step on `device`, in words, for an out-of-memory
// error: "the memory planner predicted a peak of 1.23 GB per rank for this run's step; ...".
std::string planned_peak_text(const PlanConfig& config, Device& device);

// --progress: live or plain, or for auto, live when stdout is a terminal and the job was not
// started by mpirun (Open MPI hands every rank a pseudo-terminal for stdout, also when mpirun's own
// output goes to a file or pipe, so isatty says nothing there).
ProgressStyle progress_style(const std::string& flag, const RankInfo& rank_info);

}  // namespace tessera
