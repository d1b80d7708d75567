// abort_job: the one place the library ends a whole job (a rank that cannot go on must not leave the
// others waiting in a collective forever). Used by the watchdog and by launch/run_distributed.
#pragma once

#include <string>

namespace tessera {

// Prints `message` (one line, newline added) to stderr, then calls MPI_Abort(MPI_COMM_WORLD,
// exit_code) when MPI is initialised and not finalised — the launcher then kills every rank — and
// std::abort() otherwise. Callable from any thread. Never returns.
[[noreturn]] void abort_job(const std::string& message, int exit_code = 1) noexcept;

}  // namespace tessera
