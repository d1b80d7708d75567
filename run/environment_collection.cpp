// The environment report's collection: build info, library version calls, /proc/cpuinfo, the
// device registry.
#include "tessera/run/environment_collection.hpp"

#include <mpi.h>
#include <omp.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/core/build_info.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/runtime/cpu/kernel_level.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/device_registry.hpp"

namespace tessera {
namespace {

std::string env_or(const char* name, const std::string& otherwise) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : otherwise;
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown (MPI_Get_library_version failed)";
  std::string version(text, static_cast<std::size_t>(length));
  while (!version.empty() && (version.back() == '\n' || version.back() == '\0' || version.back() == ' ')) {
    version.pop_back();
  }
  for (char& c : version) {
    if (c == '\n') c = ' ';
  }
  return version;
}


// /proc/cpuinfo's first "model name" and "flags" lines.
// "avx512 (built: avx512, avx2, portable; this CPU runs: avx512, avx2, portable)", or why none.
std::string cpu_kernel_level_text() {
  const auto names = [](const std::vector<CpuKernelLevel>& levels) {
    std::string text;
    for (const CpuKernelLevel level : levels) {
      if (!text.empty()) text += ", ";
      text += cpu_kernel_level_name(level);
    }
    return text;
  };
  std::string text;
  try {
    text = kernel_level_name();
  } catch (const std::invalid_argument& e) {
    return std::string("none chosen: ") + e.what();
  }
  text += " (built: ";
  text += names(built_cpu_kernel_levels());
  text += "; this CPU runs: ";
  text += names(supported_cpu_kernel_levels());
  text += ")";
  return text;
}

void add_cpu(EnvironmentReport& report) {
  std::ifstream in("/proc/cpuinfo");
  std::string model = "unknown (no /proc/cpuinfo)", flags;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && model.rfind("unknown", 0) == 0) model = value;
    if (key == "flags" && flags.empty()) flags = " " + value + " ";
  }
  report.add("CPU", "model", model);
  report.add("CPU", "logical cores", std::to_string(std::thread::hardware_concurrency()));
  std::string features;
  for (const char* feature : {"avx2", "avx512f", "fma"}) {
    const bool has = flags.find(std::string(" ") + feature + " ") != std::string::npos;
    features += (features.empty() ? "" : ", ") + std::string(feature) + (has ? " yes" : " no");
  }
  report.add("CPU", "features", flags.empty() ? "unknown (no flags in /proc/cpuinfo)" : features);
  report.add("CPU", "OpenMP threads", std::to_string(omp_get_max_threads()) + " (OMP_NUM_THREADS " +
                                          env_or("OMP_NUM_THREADS", "not set") + ")");
  report.add("CPU", "CPU kernel level", cpu_kernel_level_text());
}

void add_gpus(EnvironmentReport& report, const BuildInfo& build) {
  report.add("CUDA", "backend", build.cuda ? "built" : "not built (configured without CUDA)");
  if (build.cuda) {
    report.add("CUDA", "toolkit", build.cuda_toolkit);
    report.add("CUDA", "NCCL", build.nccl.empty() ? "unknown" : build.nccl);
  }
  if (build.cuda) {
    report.add("CUDA", "cuDNN",
               build.cudnn.empty() ? "not built in (GPU attention: the tiled kernel only)"
                                   : build.cudnn + " (headers built against)");
  }
  const DeviceBackend* cuda = find_device_backend(DeviceChoice::kCuda);
  if (cuda == nullptr) {
    report.add("CUDA", "GPUs seen", "none (no CUDA backend in this build)");
  } else {
    const int count = cuda->count();
    report.add("CUDA", "GPUs seen", count > 0 ? std::to_string(count) : "0: " + cuda->unusable_reason());
  }
  report.add("CUDA", "CUDA_VISIBLE_DEVICES", env_or("CUDA_VISIBLE_DEVICES", "not set"));
}

}  // namespace

EnvironmentReport collect_environment_report() {
  EnvironmentReport report;
  const BuildInfo& build = build_info();
  report.add("build", "version", build.version);
  report.add("build", "git revision", build.git_revision);
  report.add("build", "build type", build.build_type);
  report.add("build", "compiler", build.compiler);
  report.add("build", "C++ flags", build.cxx_flags.empty() ? "(none)" : build.cxx_flags);
  report.add("libraries", "MPI", mpi_library_version());
  report.add("libraries", "HDF5", detail::hdf5_library_version());
  report.add("libraries", "OpenBLAS", blas_config());
  report.add("libraries", "OpenBLAS core", blas_core_name());
  report.add("libraries", "OPENBLAS_CORETYPE", env_or("OPENBLAS_CORETYPE", "not set (OpenBLAS chose the core)"));
  add_gpus(report, build);
  add_cpu(report);
  return report;
}

}  // namespace tessera
