// abort_job: the one place the library ends a whole job (a rank that cannot go on must not leave the
// others waiting in a collective forever). Used by the watchdog and by launch/run_distributed.
#pragma once

#include <chrono>
#include <string>

namespace tessera {

// How long abort_job waits in MPI_Abort before this process exits on its own.
inline constexpr std::chrono::seconds kAbortGrace{10};

// Prints `message` (one line, newline added) to stderr, then calls MPI_Abort(MPI_COMM_WORLD,
// exit_code) when MPI is initialised and not finalised — the launcher then kills every rank; the
// process exits with exit_code after kAbortGrace if it is still alive (a launcher that lost a node
// may not return) — and std::abort() otherwise. Callable from any thread. Never returns.
[[noreturn]] void abort_job(const std::string& message, int exit_code = 1) noexcept;

}  // namespace tessera
