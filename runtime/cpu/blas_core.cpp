// OpenBLAS core detection and the re-exec remedy.
#include "tessera/runtime/cpu/blas_core.hpp"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "tessera/core/warning.hpp"

namespace tessera {

std::string blas_core_name() {
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "";
}

std::string blas_config() {
  const char* config = openblas_get_config();
  return config != nullptr ? config : "";
}

std::string better_blas_core() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return "";  // the user's choice stands
  const std::string core = blas_core_name();
  if (core != "Prescott" && core != "Core2" && core != "Nehalem" && core != "Sandybridge") return "";
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return "";
}

void reexec_with_better_blas_core(char** argv) {
  const char* keep = std::getenv("TESSERA_BLAS_CORE");
  if (keep != nullptr && std::strcmp(keep, "keep") == 0) return;
  const std::string core = better_blas_core();
  if (core.empty()) return;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  execv("/proc/self/exe", argv);
  warn(kLauncherRank, "OpenBLAS uses its generic '" + blas_core_name() +
                          "' kernels on this CPU; re-running with "
                          "OPENBLAS_CORETYPE=" +
                          core + " failed (" + std::strerror(errno) + "). Set it yourself for ~10x faster GEMMs.");
}

}  // namespace tessera
