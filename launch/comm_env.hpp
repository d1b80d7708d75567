// comm_options_from_env: the communicator settings a user can change without recompiling.
//   TESSERA_DEBUG_COLLECTIVES=1      debug mode: ranks check that they make the same collective calls
//                                    (1/true/on/yes or 0/false/off/no; default off)
//   TESSERA_COLLECTIVE_TIMEOUT=600   watchdog timeout in seconds (decimals allowed; 0 turns the
//                                    watchdog off; default 600)
#pragma once

#include "tessera/comm/comm_options.hpp"
#include "tessera/launch/environment.hpp"

namespace tessera {

// Starts from `defaults` and applies the variables that are set. Throws std::invalid_argument
// naming the variable and the accepted values when one cannot be parsed.
CommOptions comm_options_from_env(const EnvLookup& env, CommOptions defaults = {});

}  // namespace tessera
