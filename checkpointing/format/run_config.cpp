// RunConfig: how floating values are written.
#include "tessera/checkpointing/format/run_config.hpp"

#include <cstdio>

namespace tessera {

std::string RunConfig::format_double(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

}  // namespace tessera
