// The stop-signal handlers: one lock-free atomic, set once; Ctrl-C also restores SIGINT's default
// action and says so on rank 0.
#include "scaletrain/train/stop_signals.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

#include "scaletrain/core/error.hpp"

namespace scaletrain::train {
namespace {

std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only touch lock-free atomics");

constexpr char kCtrlCNotice[] =
    "\nscaletrain: Ctrl-C: stopping after this step (with a checkpoint where run.dir is set); Ctrl-C again ends at "
    "once\n";

// Only async-signal-safe calls: an atomic, signal() and write().
extern "C" void on_stop_signal(int signal) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, signal);
  if (signal != SIGINT) return;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
  if (error_rank() <= 0) (void)!write(STDERR_FILENO, kCtrlCNotice, sizeof kCtrlCNotice - 1);
}

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGUSR1, SIGTERM, SIGINT})
    ST_CHECK(sigaction(s, &sa, nullptr) == 0, "sigaction(", signal_name(s), ") failed: ", std::strerror(errno));
}

int received_stop_signal() { return g_stop_signal.load(std::memory_order_relaxed); }

void clear_stop_signal() { g_stop_signal.store(0); }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "signal " + std::to_string(signal);
  }
}

}  // namespace scaletrain::train
