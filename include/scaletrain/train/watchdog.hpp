// Watchdog: ends the job when this rank stays in one phase of one step longer than run.watchdog_s,
// so that a rank which stopped, hangs in a read, or waits forever for a dead peer does not hold the
// job until the scheduler's limit. The start-up and first step, evaluations and checkpoint writes
// get run.watchdog_long_s instead. A thread polls the phase the training loop last entered; on
// expiry it prints what this rank waited for and calls the final action: the trainer's is the
// communicator's abort (MPI_Abort; a NCCL communicator calls ncclCommAbort first).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace scaletrain::train {

// The exit code of a job ended by the watchdog (sysexits' EX_UNAVAILABLE: a rank became unavailable).
constexpr int kExitWatchdog = 69;

struct WatchdogOptions {
  double limit_s = 300;        // run.watchdog_s (0: no watchdog)
  double long_limit_s = 1800;  // run.watchdog_long_s
  int rank = 0;
  std::string host;
};

class Watchdog {
 public:
  // Called once, on the watchdog's thread, after the message is printed.
  using FinalAction = std::function<void(const std::string& message)>;
  Watchdog(WatchdogOptions options, FinalAction final_action);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  bool enabled() const { return options_.limit_s > 0; }
  // The loop has entered `phase` (a string with static storage) of `step`; `long_allowance` for
  // the phases that get run.watchdog_long_s.
  void enter(const char* phase, int64_t step, bool long_allowance = false);

  // The text printed on expiry.
  static std::string message(const WatchdogOptions& o, const char* phase, int64_t step, double waited_s,
                             bool long_allowance);

 private:
  void watch();

  WatchdogOptions options_;
  FinalAction final_action_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  const char* phase_ = "start-up";
  int64_t step_ = 0;
  double since_;
  bool long_ = true;
  std::thread thread_;
};

}  // namespace scaletrain::train
