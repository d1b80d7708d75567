// A checkpoint's health: meta.h5's `healthy` flag, written at save time from the step it was saved
// after, and a later judgement beside it. A step's loss is the loss of the weights going into it, so
// the step after a save is what tells whether the saved weights were healthy; when it says they were
// not (a loss that is not finite or stands above the spike guard's band), the run writes
//
//   DIR/step_0000500/unhealthy.txt    one line: why ("the loss of step 501 ... is 9e+11 spreads above ...")
//
// atomically (written beside, fsynced, renamed in). meta.h5 is never rewritten: its digests stay whole.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace tessera {

inline constexpr const char* kUnhealthyMarkName = "unhealthy.txt";

// Writes the mark into the committed checkpoint directory `checkpoint`. Throws CheckpointError(kIo)
// naming the path.
void mark_checkpoint_unhealthy(const std::filesystem::path& checkpoint, const std::string& reason);

// The reason a later step gave (the mark's first line, at most 1 KiB); nullopt when there is none.
std::optional<std::string> unhealthy_mark(const std::filesystem::path& checkpoint);

// Whether the checkpoint directory holds healthy state: meta.h5 readable and marked healthy, and no
// later judgement against it.
bool checkpoint_is_healthy(const std::filesystem::path& checkpoint);

// What a tool that reads the checkpoint directory `checkpoint` tells the user when it is not
// healthy: "DIR (step 8) is not healthy: REASON; the newest healthy checkpoint beside it is
// DIR/step_0000003". nullopt when it is healthy.
std::optional<std::string> unhealthy_checkpoint_notice(const std::filesystem::path& checkpoint);

}  // namespace tessera
