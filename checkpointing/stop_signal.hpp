// StopSignalHandler: while alive, SIGTERM, SIGUSR1 and SIGINT (Ctrl-C) only set a flag
// (async-signal-safe), so a training loop can save a checkpoint at the next step boundary and stop.
// Slurm sends SIGTERM to every task before the time limit (or a chosen signal with
// --signal=USR1@120); mpirun forwards SIGUSR1 to its ranks. A first SIGINT also says on stderr that
// the run stops after this step and that a second Ctrl-C stops at once; the second one gets
// SIGINT's default action (the process ends without saving). A SIGINT the process was started with
// ignored (a background job of a script) stays ignored. The previous handlers come back on
// destruction. One instance per process at a time (signal dispositions are process-wide).
#pragma once

#include <csignal>

namespace tessera {

class StopSignalHandler {
 public:
  StopSignalHandler();   // installs; throws std::logic_error when another instance is alive
  ~StopSignalHandler();  // restores the previous handlers
  StopSignalHandler(const StopSignalHandler&) = delete;
  StopSignalHandler& operator=(const StopSignalHandler&) = delete;

  // The signal received since construction (or clear()), or 0.
  int received() const;
  void clear();

 private:
  struct sigaction old_term_ {};
  struct sigaction old_usr1_ {};
  struct sigaction old_int_ {};
  bool handles_int_ = false;  // false: SIGINT was ignored when installed, and stays so
};

}  // namespace tessera
