// Which CPU kernels OpenBLAS chose, and a remedy when it chose a generic one.
// OpenBLAS reads OPENBLAS_CORETYPE once, when the library loads; a release that predates the CPU
// falls back to its oldest x86-64 kernels ("Prescott"), about 10x slower than the AVX-512 ones.
#pragma once

#include <string>

namespace tessera {

// openblas_get_corename(), e.g. "SkylakeX", "Haswell", "Prescott".
std::string blas_core_name();

// openblas_get_config(): its version and build options, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY
// SkylakeX MAX_THREADS=64".
std::string blas_config();

// The OPENBLAS_CORETYPE this CPU can run faster with, when OpenBLAS picked a generic core and the
// user did not choose one: "SkylakeX" (AVX-512), "Haswell" (AVX2), or "" when nothing is better.
std::string better_blas_core();

// For programs, before MPI or threads start: when better_blas_core() names a core, sets
// OPENBLAS_CORETYPE to it and re-executes the program (same pid, same arguments), so the BLAS loads
// its fast kernels. TESSERA_BLAS_CORE=keep disables this. Returns normally when nothing was done
// (or the re-exec failed, with a warning on stderr).
void reexec_with_better_blas_core(char** argv);

}  // namespace tessera
