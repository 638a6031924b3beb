// The hang watchdog (train/watchdog.hpp) on its own thread: it ends the job (here: a recording final
// action) when one phase outlasts run.watchdog_s, with a message naming the rank, host, phase, step
// and wait, once; phases that keep changing never trip it; the long allowance holds for the phases that have it; 0 turns it off. The end-to-end
// cases (a rank stopped with SIGSTOP, a rank killed under srun) are in tests/signals.cmake and
// tests/slurm.cmake.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "scaletrain/core/timer.hpp"
#include "scaletrain/train/watchdog.hpp"

namespace scaletrain::train {
namespace {

struct Recorder {
  std::mutex mu;
  std::vector<std::string> events;
  double fired_at = 0;
  void add(const std::string& e) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(e);
    if (e.rfind("final:", 0) == 0) fired_at = now_seconds();
  }
  std::vector<std::string> get() {
    std::lock_guard<std::mutex> lock(mu);
    return events;
  }
};

WatchdogOptions options(double limit, double long_limit) { return WatchdogOptions{limit, long_limit, 3, "node7"}; }

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// Waits up to `limit` seconds for `done` (generous: a loaded machine delays threads).
template <class F>
void wait_for(F done, double limit = 10) {
  for (const double end = now_seconds() + limit; !done() && now_seconds() < end;) sleep_s(0.01);
}

TEST(Watchdog, OnePhaseTooLongEndsTheJobOnceNamingRankPhaseStepAndWait) {
  Recorder rec;
  const double start = now_seconds();
  {
    Watchdog w(options(0.3, 5), [&](const std::string& m) { rec.add("final:" + m); });
    w.enter("allreduce_exposed", 42);
    wait_for([&] { return !rec.get().empty(); });
  }
  const std::vector<std::string> ev = rec.get();
  ASSERT_EQ(ev.size(), 1u);
  const std::string& m = ev[0];
  EXPECT_NE(m.find("rank 3 (host node7)"), std::string::npos) << m;
  EXPECT_NE(m.find("phase 'allreduce_exposed' of step 42"), std::string::npos) << m;
  EXPECT_NE(m.find("run.watchdog_s = 0.3 s"), std::string::npos) << m;
  const double after = rec.fired_at - start;
  EXPECT_GE(after, 0.3);
  EXPECT_LT(after, 5.0);
}

TEST(Watchdog, PhasesThatKeepChangingNeverTripIt) {
  std::atomic<int> fired{0};
  Watchdog w(options(1.0, 5), [&](const std::string&) { ++fired; });
  const char* phases[] = {"forward", "backward", "agree", "optimizer"};
  for (int i = 0; i < 100; ++i) {  // 2 s in all, each phase 20 ms
    w.enter(phases[i % 4], i / 4);
    sleep_s(0.02);
  }
  EXPECT_EQ(fired.load(), 0);
}

TEST(Watchdog, TheLongAllowanceHoldsForThePhasesThatHaveIt) {
  std::atomic<int> fired{0};
  std::string message;
  {
    Watchdog w(options(0.2, 3.0), [&](const std::string& m) {
      message = m;
      ++fired;
    });
    w.enter("checkpoint", 7, true);
    sleep_s(0.8);  // past run.watchdog_s, well within run.watchdog_long_s
    EXPECT_EQ(fired.load(), 0);
    wait_for([&] { return fired.load() > 0; });
  }
  EXPECT_EQ(fired.load(), 1);
  EXPECT_NE(message.find("phase 'checkpoint' of step 7"), std::string::npos) << message;
  EXPECT_NE(message.find("run.watchdog_long_s = 3 s"), std::string::npos) << message;
}

TEST(Watchdog, TheStartUpHasTheLongAllowance) {
  std::atomic<int> fired{0};
  {
    Watchdog w(options(0.1, 30), [&](const std::string&) { ++fired; });
    sleep_s(0.5);
  }
  EXPECT_EQ(fired.load(), 0);
}

TEST(Watchdog, ZeroTurnsItOff) {
  std::atomic<int> fired{0};
  Watchdog w(options(0, 0), [&](const std::string&) { ++fired; });
  EXPECT_FALSE(w.enabled());
  w.enter("forward", 1);
  sleep_s(0.2);
  EXPECT_EQ(fired.load(), 0);
}

}  // namespace
}  // namespace scaletrain::train
