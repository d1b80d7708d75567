// Flag-only handlers for SIGTERM / SIGUSR1 / SIGINT; a second SIGINT ends the process.
#include "tessera/checkpointing/stop_signal.hpp"

#include <unistd.h>

#include <atomic>
#include <stdexcept>

namespace tessera {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_interrupts = 0;
std::atomic<bool> g_installed{false};

constexpr char kFirstInterrupt[] =
    "\ninterrupted: saving at the end of this step (with a checkpoint directory), then stopping;\n"
    "             Ctrl-C again stops at once\n";

extern "C" void on_stop_signal(int signal) {
  if (signal == SIGINT) {
    if (g_interrupts != 0) {  // the second Ctrl-C: SIGINT's default action, now
      std::signal(SIGINT, SIG_DFL);
      std::raise(SIGINT);
      return;
    }
    g_interrupts = 1;
    const ssize_t ignored = ::write(2, kFirstInterrupt, sizeof kFirstInterrupt - 1);
    (void)ignored;
  }
  g_stop_signal = signal;
}

}  // namespace

StopSignalHandler::StopSignalHandler() {
  if (g_installed.exchange(true)) throw std::logic_error("StopSignalHandler: another instance is already installed");
  g_stop_signal = 0;
  g_interrupts = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, &old_term_);
  sigaction(SIGUSR1, &action, &old_usr1_);
  sigaction(SIGINT, nullptr, &old_int_);
  handles_int_ = old_int_.sa_handler != SIG_IGN;
  if (handles_int_) sigaction(SIGINT, &action, nullptr);
}

StopSignalHandler::~StopSignalHandler() {
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGUSR1, &old_usr1_, nullptr);
  if (handles_int_) sigaction(SIGINT, &old_int_, nullptr);
  g_installed.store(false);
}

int StopSignalHandler::received() const { return static_cast<int>(g_stop_signal); }

void StopSignalHandler::clear() { g_stop_signal = 0; }

}  // namespace tessera
