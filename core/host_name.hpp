// The host name of the machine a process runs on, as rank messages and node layouts name it.
#pragma once

#include <string>

namespace tessera {

// This machine's host name ("unknown-host" if it cannot be read).
std::string this_hostname();

}  // namespace tessera
