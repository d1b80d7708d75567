// CommOptions: the settings every communicator backend honours — the collective-call check (debug
// mode) and the watchdog timeout. launch/ fills them from the environment
// (TESSERA_DEBUG_COLLECTIVES, TESSERA_COLLECTIVE_TIMEOUT); programs and tests may set them directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tessera {

enum class CollectiveCheck : std::uint8_t {
  kOff,         // collectives run as called
  kMatchCalls,  // debug mode: before every collective the ranks exchange what they were asked to do
                // (sequence number, collective, count, dtype, op, root) and, when the calls differ,
                // every rank raises CollectiveMismatchError naming both calls instead of hanging or
                // exchanging garbage. Costs one small all-gather per collective on backends that need
                // it (NCCL); the MPI backend checks every call either way, for free: each message's
                // tag is a digest of its call (comm/mpi/call_check.hpp).
};

const char* collective_check_name(CollectiveCheck check);  // "off", "match-calls"

inline constexpr std::chrono::milliseconds kDefaultWatchdogTimeout = std::chrono::minutes(10);

struct CommOptions {
  CollectiveCheck check = CollectiveCheck::kOff;
  // A collective that has not completed after this long makes the watchdog print which rank waits
  // in which collective and abort the whole job (MPI_Abort). Zero turns the watchdog off.
  std::chrono::milliseconds watchdog_timeout = kDefaultWatchdogTimeout;
  // Shown in messages; split() names sub-groups "<parent>/<color>".
  std::string name = "world";
};

}  // namespace tessera
