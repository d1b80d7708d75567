// Names of the collective-check modes.
#include "tessera/comm/comm_options.hpp"

namespace tessera {

const char* collective_check_name(CollectiveCheck check) {
  switch (check) {
    case CollectiveCheck::kOff: return "off";
    case CollectiveCheck::kMatchCalls: return "match-calls";
  }
  return "unknown";
}

}  // namespace tessera
