// The validation token file a program takes beside its training file when --val-data is not given.
#pragma once

#include <optional>
#include <string>

namespace tessera {

// The first existing of: llm.c's pair for a file named <name>_train.<ext> (<name>_val.<ext>, as
// llm.c's tinyshakespeare_train.bin / tinyshakespeare_val.bin), then <stem>_val.<ext> beside it
// (data.bin -> data_val.bin, what tessera_prepare writes); nullopt when neither exists.
std::optional<std::string> default_validation_file(const std::string& train_file);

}  // namespace tessera
