// Umbrella header for programs that embed Tessera: #include <tessera/tessera.hpp> brings the
// distributed context, devices (a rank's own GPU: make_rank_device, and its communicator:
// make_device_world), strict number parsing, tensors and modules (the GPT among them; Sequential, the
// activations, Dropout and Residual to build a model from), a program's own element-wise ops
// (elementwise_map), the sharded engine, the trainer and its losses (token, masked cross-entropy,
// mean squared error), the batch planner, the memory planner for any Module (plan_memory,
// preflight_memory_check), the training checkpointer and the training loop (TrainingRun). Finer headers
// are named by layer and file, e.g. <tessera/model/modules/linear.hpp>.
#pragma once

#include "tessera/checkpointing/training_checkpointer.hpp"
#include "tessera/comm/device_communicator.hpp"
#include "tessera/core/parse_number.hpp"
#include "tessera/launch/distributed_context.hpp"
#include "tessera/launch/rank_device.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/model/module.hpp"
#include "tessera/model/modules/activation.hpp"
#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/model/modules/dropout.hpp"
#include "tessera/model/modules/embedding.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/modules/layer_norm.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/model/modules/mlp.hpp"
#include "tessera/model/modules/residual.hpp"
#include "tessera/model/modules/sequential.hpp"
#include "tessera/model/optim/lr_schedule.hpp"
#include "tessera/planning/custom_model.hpp"
#include "tessera/planning/measured_step.hpp"
#include "tessera/planning/memory_plan.hpp"
#include "tessera/planning/preflight.hpp"
#include "tessera/run/training_run.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/elementwise_map.hpp"
#include "tessera/runtime/tensor.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/sharding/sharding_config.hpp"
#include "tessera/training/batch_plan.hpp"
#include "tessera/training/loss.hpp"
#include "tessera/training/losses/masked_cross_entropy.hpp"
#include "tessera/training/losses/mean_squared_error.hpp"
#include "tessera/training/losses/token_cross_entropy.hpp"
#include "tessera/training/trainer.hpp"
