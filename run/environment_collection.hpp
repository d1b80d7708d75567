// collect_environment_report: the EnvironmentReport (checkpointing/format/environment_report.hpp)
// of this process — build (version, git revision, type, compiler, flags), libraries (MPI's library
// version string, HDF5, OpenBLAS's config and chosen core, OPENBLAS_CORETYPE), CUDA (built or
// not, toolkit, NCCL, cuDNN, the GPUs seen), CPU (model, cores, avx2 / avx512f / fma, OpenMP
// threads, the CPU kernel level). Local to the process: no collectives. MPI need not be initialised.
// Programs add what only they link (Boost) with EnvironmentReport::add.
#pragma once

#include "tessera/checkpointing/format/environment_report.hpp"

namespace tessera {

EnvironmentReport collect_environment_report();

}  // namespace tessera
