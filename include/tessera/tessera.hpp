// Umbrella header for programs that embed Tessera: #include <tessera/tessera.hpp> brings the
// distributed context, devices (a rank's own GPU: make_rank_device, and its communicator:
// make_device_world), tensors and modules (the GPT among them), the sharded engine, the trainer
// and the training checkpointer. Finer headers keep the source layout, e.g. "runtime/modules/linear.hpp".
#pragma once

#include "comm/device_communicator.hpp"
#include "launch/distributed_context.hpp"
#include "launch/rank_device.hpp"
#include "launch/run_distributed.hpp"
#include "runtime/device.hpp"
#include "runtime/device_factory.hpp"
#include "runtime/tensor.hpp"
#include "runtime/module.hpp"
#include "runtime/modules/embedding.hpp"
#include "runtime/modules/gpt.hpp"
#include "runtime/modules/linear.hpp"
#include "runtime/modules/mlp.hpp"
#include "runtime/modules/layer_norm.hpp"
#include "runtime/modules/cross_entropy_loss.hpp"
#include "runtime/optim/lr_schedule.hpp"
#include "sharding/sharding_config.hpp"
#include "sharding/sharded_engine.hpp"
#include "training/trainer.hpp"
#include "checkpointing/training_checkpointer.hpp"
