// plan_run_batch: the batch plan of a run that may resume. A fresh run plans as plan_batch does; a
// resume keeps the global batch its checkpoint was trained with at this rank count, unless the
// request names a new one or `change` allows it (training/resumed_batch_plan.hpp). Collective (the
// checkpoint is found and read by rank 0), so call it on every rank before building the engine:
// the memory check and the engine need the micro-batch it chooses.
//
//   const ResumedBatch batch = plan_run_batch(request, options.checkpoint, BatchChange::kKeep, world);
//   if (world.rank() == 0 && !batch.line.empty()) std::printf("%s\n", batch.line.c_str());
//   options.batch = batch.plan;
//   options.batch_change = batch.global_changed ? BatchChange::kAllow : BatchChange::kKeep;
#pragma once

#include <map>
#include <optional>
#include <string>

#include "tessera/checkpointing/training_checkpointer.hpp"
#include "tessera/comm/communicator.hpp"
#include "tessera/training/resumed_batch_plan.hpp"

namespace tessera {

// The batch plan recorded in a checkpoint's run fields (global_batch, micro_batch, grad_accum,
// data_parallel_ranks: what TrainingRun records); nullopt when one is missing or not a number.
std::optional<SavedBatch> saved_batch_of(const std::map<std::string, std::string>& run_fields);

// line: "" for a fresh run (or a checkpoint that recorded no batch plan). Throws std::invalid_argument
// as plan_batch / plan_resumed_batch do, CheckpointError as find_resume_target does.
ResumedBatch plan_run_batch(const BatchRequest& request, const CheckpointOptions& checkpoint, BatchChange change,
                            Communicator& world);

}  // namespace tessera
