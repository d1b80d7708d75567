// this_hostname: gethostname, with a name for when it fails.
#include "tessera/core/host_name.hpp"

#include <unistd.h>

namespace tessera {

std::string this_hostname() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "unknown-host";
  return host;
}

}  // namespace tessera
