// version_line: the first line of every program's --version (the values: build_info_values.cpp,
// written by CMake into the build directory).
#include "tessera/core/build_info.hpp"

namespace tessera {

std::string version_line(const std::string& program) {
  const BuildInfo& b = build_info();
  return program + " (Tessera " + b.version + ", git " + b.git_revision + ")";
}

}  // namespace tessera
