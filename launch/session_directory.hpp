// session_directory_problem: whether MPI can make its session directory. Open MPI keeps one per job
// under TMPDIR (else /tmp); where that is read-only or full, MPI_Init fails deep inside with
// "orte_session_dir failed" and "Unable to start a daemon on the local node". A process started
// alone checks first, by writing a small file there, and says what to change instead.
#pragma once

#include <string>

namespace tessera {

// "" when a 64 KiB file can be written (and is removed again) in TMPDIR, or /tmp when TMPDIR is
// unset or empty; else one sentence naming the directory, the error and what to do.
std::string session_directory_problem();

}  // namespace tessera
