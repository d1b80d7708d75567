// train_gpt's flags for the library settings it exposes: how its errors name them
// (reword_setting_errors) and how a recommended configuration prints as a train_gpt command line
// (tessera_plan --recommend, train_gpt's pre-flight memory check).
#pragma once

#include <string>

#include "tessera/core/setting_error.hpp"
#include "tessera/planning/plan_config.hpp"
#include "tessera/training/batch_plan.hpp"

namespace tessera {

const SettingNames& train_gpt_setting_names();
BatchNames train_gpt_batch_names();

// What a printed command needs beyond the plan to run as printed: the token file (--data; made
// absolute, so the command runs from any directory) and the device (--device) when not the default.
// Empty: left out.
struct CommandInputs {
  std::string data;
  std::string device;
};

// "mpirun -np 8 /abs/build/examples/train_gpt --data /abs/data/corpus.bin --layers 24 ... --zero 2
// --micro-batch 4 --grad-accum 8" (no mpirun for one rank): train_gpt by its real path (beside the
// running program), the inputs given, and the plan's training settings as train_gpt's flags.
std::string train_gpt_command(const PlanConfig& config, const CommandInputs& inputs = {});

}  // namespace tessera
