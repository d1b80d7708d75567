// The environment report of a Tessera program (run/environment_collection.hpp) with what only the
// programs link added: Boost's version (Boost.Program_options reads their flags). tessera_env
// prints it; train_gpt --env prints it, and train_gpt records it in every checkpoint and its
// metrics file.
#pragma once

#include "tessera/checkpointing/format/environment_report.hpp"

namespace tessera {

EnvironmentReport program_environment_report();

}  // namespace tessera
