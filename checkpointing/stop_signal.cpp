// Flag-only handlers for SIGTERM / SIGUSR1.
#include "tessera/checkpointing/stop_signal.hpp"

#include <atomic>
#include <stdexcept>

namespace tessera {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
std::atomic<bool> g_installed{false};

extern "C" void on_stop_signal(int signal) { g_stop_signal = signal; }

}  // namespace

StopSignalHandler::StopSignalHandler() {
  if (g_installed.exchange(true)) throw std::logic_error("StopSignalHandler: another instance is already installed");
  g_stop_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, &old_term_);
  sigaction(SIGUSR1, &action, &old_usr1_);
}

StopSignalHandler::~StopSignalHandler() {
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGUSR1, &old_usr1_, nullptr);
  g_installed.store(false);
}

int StopSignalHandler::received() const { return static_cast<int>(g_stop_signal); }

void StopSignalHandler::clear() { g_stop_signal = 0; }

}  // namespace tessera
