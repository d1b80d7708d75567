// The MPI communicator's transports, for tests parametrised over them: shared memory (the ranks of
// a test share one node), shared memory with slots so small that larger counts agree there and then
// move by messages, and messages only, with default and tiny pipeline segments (so small counts
// cross many segments).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>
#include <string>

#include "tessera/comm/mpi/mpi_communicator.hpp"

namespace tessera::testing {

struct MpiTransport {
  std::string name;
  std::size_t segment_bytes = MpiTuning{}.segment_bytes;
  std::size_t shared_memory_bytes = MpiTuning{}.shared_memory_bytes;

  MpiTuning tuning() const {
    MpiTuning tuning(segment_bytes);
    tuning.shared_memory_bytes = shared_memory_bytes;
    return tuning;
  }
};

inline void PrintTo(const MpiTransport& transport, std::ostream* out) { *out << transport.name; }

// `tiny_segment_bytes`: the pipeline segment of the messages-only case that crosses many segments.
inline auto all_mpi_transports(std::size_t tiny_segment_bytes) {
  return ::testing::Values(
      MpiTransport{"shared_memory"}, MpiTransport{"shared_memory_4KiB_slots", tiny_segment_bytes, 4096},
      MpiTransport{"messages", std::size_t{1} << 20, 0},
      MpiTransport{"messages_segment_" + std::to_string(tiny_segment_bytes) + "B", tiny_segment_bytes, 0});
}

inline std::string mpi_transport_name(const ::testing::TestParamInfo<MpiTransport>& info) { return info.param.name; }

}  // namespace tessera::testing
