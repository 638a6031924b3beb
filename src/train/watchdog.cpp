// Watchdog (train/watchdog.hpp): a polling thread over the phase the loop last entered.
#include "scaletrain/train/watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "scaletrain/core/timer.hpp"

namespace scaletrain::train {

Watchdog::Watchdog(WatchdogOptions options, FinalAction final_action)
    : options_(std::move(options)), final_action_(std::move(final_action)), since_(now_seconds()) {
  if (enabled()) thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::enter(const char* phase, int64_t step, bool long_allowance) {
  if (!enabled()) return;
  const double now = now_seconds();
  std::lock_guard<std::mutex> lock(mu_);
  phase_ = phase;
  step_ = step;
  since_ = now;
  long_ = long_allowance;
}

std::string Watchdog::message(const WatchdogOptions& o, const char* phase, int64_t step, double waited_s,
                              bool long_allowance) {
  char text[640];
  std::snprintf(text, sizeof text,
                "watchdog: rank %d (host %s) has been in phase '%s' of step %lld for %.1f s, longer than %s = %g s: "
                "ending the job. A rank that has stopped, died or hangs in I/O is the usual cause; a rank waiting "
                "in a collective (allreduce_exposed, agree) waits for such a rank",
                o.rank, o.host.c_str(), phase, static_cast<long long>(step), waited_s,
                long_allowance ? "run.watchdog_long_s" : "run.watchdog_s",
                long_allowance ? o.long_limit_s : o.limit_s);
  return text;
}

void Watchdog::watch() {
  const double poll_s = std::clamp(options_.limit_s / 20, 0.05, 1.0);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::duration<double>(poll_s));
    if (stopping_) return;
    const double waited = now_seconds() - since_;
    if (waited <= (long_ ? options_.long_limit_s : options_.limit_s)) continue;
    const std::string msg = message(options_, phase_, step_, waited, long_);
    lock.unlock();
    std::fprintf(stderr, "scaletrain: error: %s\n", msg.c_str());
    std::fflush(stderr);
    final_action_(msg);
    return;
  }
}

}  // namespace scaletrain::train
