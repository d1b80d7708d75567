// How the training progress spells times: durations ("850ms", "42s", "4m05s", "2h07m", "3d04h")
// and wall-clock time stamps in ISO 8601 with the local offset ("2025-01-31T12:00:00+01:00").
#pragma once

#include <chrono>
#include <string>

namespace tessera {

// Two units at the most, rounded down; negative or non-finite values read "?".
std::string format_duration(double seconds);

// Local time, to the second, with its UTC offset.
std::string iso8601_local(std::chrono::system_clock::time_point time);

}  // namespace tessera
