// The stop signals: blocked in every thread and taken by one thread of their own (sigwait), so that
// no signal frame is ever pushed onto a thread that is running JIT code. oneDNN's generated GEMM
// kernels point rsp into a heap workspace; a handler run there writes its frame into the heap
// (uxlfoundation/oneDNN#4845, fixed in 3.11; Debian ships 2.6.3). A thread started before the
// signals were blocked still records them through an async-signal-safe handler.
#include "scaletrain/train/stop_signals.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

#include "scaletrain/core/error.hpp"

namespace scaletrain::train {
namespace {

std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only touch lock-free atomics");

constexpr char kCtrlCNotice[] =
    "\nscaletrain: Ctrl-C: stopping after the next step (with a checkpoint where run.dir is set); Ctrl-C again ends at "
    "once\n";

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGUSR1, SIGTERM, SIGINT}) sigaddset(&set, s);
  return set;
}

// Records the first stop signal. The first Ctrl-C restores SIGINT's default action (a second one
// ends the process at once) and says so on rank 0. Only async-signal-safe calls: it also runs as
// a handler.
void record_stop_signal(int signal) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, signal);
  if (signal != SIGINT) return;
  std::signal(SIGINT, SIG_DFL);
  if (error_rank() <= 0) (void)!write(STDERR_FILENO, kCtrlCNotice, sizeof kCtrlCNotice - 1);
}

extern "C" void on_stop_signal(int signal) { record_stop_signal(signal); }

// The signal thread. After the first SIGINT it unblocks SIGINT in itself: the kernel then delivers
// the next one here, where its default action ends the process.
void take_stop_signals() {
  sigset_t waiting = stop_signal_set();
  for (;;) {
    int signal = 0;
    if (sigwait(&waiting, &signal) != 0) continue;
    record_stop_signal(signal);
    if (signal == SIGINT && sigismember(&waiting, SIGINT)) {
      sigdelset(&waiting, SIGINT);
      sigset_t interrupt;
      sigemptyset(&interrupt);
      sigaddset(&interrupt, SIGINT);
      pthread_sigmask(SIG_UNBLOCK, &interrupt, nullptr);
    }
  }
}

}  // namespace

void install_stop_signal_handlers() {
  const sigset_t set = stop_signal_set();
  const int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ST_CHECK(rc == 0, "pthread_sigmask(SIG_BLOCK) of the stop signals failed: ", std::strerror(rc));
  static std::once_flag started;
  std::call_once(started, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGUSR1, SIGTERM, SIGINT})
      ST_CHECK(sigaction(s, &sa, nullptr) == 0, "sigaction(", signal_name(s), ") failed: ", std::strerror(errno));
    std::thread(take_stop_signals).detach();  // inherits the blocked set, which sigwait takes from
  });
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
