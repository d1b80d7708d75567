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

// "mpirun -np 8 train_gpt --layers 24 ... --zero 2 --micro-batch 4 --grad-accum 8" (no mpirun for one
// rank): the plan's training settings as train_gpt's flags.
std::string train_gpt_command(const PlanConfig& config);

}  // namespace tessera
