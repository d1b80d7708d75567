// Where a resume starts, known before the engine exists: the checkpoint CheckpointOptions::resume
// names (as TrainingCheckpointer::resume will load it) and the run fields it recorded — so a program
// can plan what depends on the checkpoint (the batch plan a resume keeps) before it builds anything.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "tessera/checkpointing/training_checkpointer.hpp"
#include "tessera/comm/communicator.hpp"

namespace tessera {

// Collective over `world`: every rank resolves options.resume ("auto": options.dir's latest;
// otherwise a run or checkpoint directory) and the answers must agree. nullopt: the run starts
// fresh (no resume asked for, or "auto" in a directory without checkpoints). Throws CheckpointError
// on every rank when a named target holds no checkpoint (kMissingFile), when ranks find different
// checkpoints (kMissingFile, naming each answer's ranks and hosts: the directory differs between
// nodes), or when the directory cannot be read (kIo).
std::optional<std::filesystem::path> find_resume_target(const CheckpointOptions& options, Communicator& world);

// Collective over `world`: the `run` fields (RunConfig::run()) recorded in the meta.h5 of the
// checkpoint directory `target`, read by rank 0. Throws CheckpointError on every rank when it cannot
// be read.
std::map<std::string, std::string> read_saved_run_fields(const std::filesystem::path& target, Communicator& world);

}  // namespace tessera
