// Agreement on the outcome of a step that every rank ran on its own (writing its shard, reading
// its byte ranges): a collective after which either every rank goes on, or every rank throws the
// same CheckpointError — the one of the lowest failing rank, naming it — so no rank waits forever
// for one that failed, and no rank commits or applies what another could not.
#pragma once

#include <functional>
#include <optional>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/comm/communicator.hpp"

namespace tessera {

// Collective over `comm`. `local`: this rank's failure, or nullopt.
void agree_on_success(Communicator& comm, const std::optional<CheckpointError>& local);

// Runs `body`, turning any exception into a CheckpointError (kIo for non-checkpoint errors), then
// agrees. Every rank of `comm` must call it at the same point.
void run_and_agree(Communicator& comm, const std::function<void()>& body);

}  // namespace tessera
