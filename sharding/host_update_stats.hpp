// HostUpdateStats: what updating offloaded state on the host cost a discrete device's engine
// (Placement::update_on_host): the bytes its copies moved each way and the host's time waiting for
// the gradients to arrive and running the optimizer passes. Summed over units; a benchmark reads it
// per step (ShardedEngine::host_update_stats, reset_host_update_stats).
#pragma once

#include <cstdint>

namespace tessera {

struct HostUpdateStats {
  std::int64_t bytes_to_host = 0;    // gradient ranges copied to pinned host memory
  std::int64_t bytes_to_device = 0;  // updated parameters and ZeRO-3 shards copied to the device
  double copy_wait_seconds = 0;      // the host blocked until a unit's gradients had arrived
  double update_seconds = 0;         // the host's optimizer passes (master, state, parameters)
  std::int64_t updated_elements = 0;

  HostUpdateStats& operator+=(const HostUpdateStats& other) {
    bytes_to_host += other.bytes_to_host;
    bytes_to_device += other.bytes_to_device;
    copy_wait_seconds += other.copy_wait_seconds;
    update_seconds += other.update_seconds;
    updated_elements += other.updated_elements;
    return *this;
  }
};

}  // namespace tessera
