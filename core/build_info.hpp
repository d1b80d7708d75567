// What this build of Tessera is: the project version, the git revision it was built from, and the
// build's options (type, compiler, flags, the CUDA backend and the versions it was built against).
// CMake writes the values (cmake/TesseraBuildInfo.cmake): the git revision at every build, the rest
// when the build is configured. Every program's --version and the environment report print them.
#pragma once

#include <string>

namespace tessera {

struct BuildInfo {
  std::string version;       // "0.1.0" (project() in CMakeLists.txt)
  std::string git_revision;  // "1a2b3c4d5e6f" (+ " (modified)" with uncommitted changes), or the reason none is known
  std::string build_type;    // "Release", "Debug", ...
  std::string compiler;      // "GNU 12.2.0"
  std::string cxx_flags;     // the flags of the build type and CMAKE_CXX_FLAGS, and -march=native when on
  bool cuda = false;         // the CUDA backend (cuBLAS, NCCL) was built
  std::string cuda_toolkit;  // the toolkit version it was built with; "" without CUDA
  std::string nccl;          // NCCL's version from nccl.h; "" without CUDA
  std::string cudnn;         // "9.19.0, frontend 1.32.0" (cuDNN's fused attention); "" when not built
};

const BuildInfo& build_info();

// "train_gpt (Tessera 0.1.0, git 1a2b3c4d5e6f)": what --version prints.
std::string version_line(const std::string& program);

}  // namespace tessera
