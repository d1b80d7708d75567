// level_functions: what one instruction-set level offers the CPU device, as one table.
#include "tessera/runtime/cpu/host_copy.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

const CpuLevelFunctions& level_functions() {
  static const LevelKernels kernels;
  static const CpuLevelFunctions functions{&kernels, &stream_copy, &parallel_stream_copy, &stream_zero,
                                           &parallel_stream_zero};
  return functions;
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
