// PhaseClock: the per-step phase times of the training loop. Phases that run on the device
// (input, forward, backward, optimizer) are timed with events recorded on the compute stream, so
// an asynchronous device is measured where the work runs, not where it is queued; host phases
// (data_wait, allreduce_exposed, step) with the host clock. A step's device events are read once
// they have completed, in a later step, never by waiting (flush() waits, at the points that drain
// the device anyway); a step whose events of `depth` steps before are still pending gets a set of
// its own. A phase may run several times in a step (one per micro-batch with train.accumulate_steps):
// each run has its own pair of events, and the step's time of the phase is their sum. On the CPU
// backend events complete when recorded: the same numbers as host timing.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/train/timeline.hpp"

namespace scaletrain::train {

class PhaseClock {
 public:
  PhaseClock(Backend& backend, PhaseTimers& timers, Timeline& timeline, int depth = 4);

  void begin_step(int64_t step);
  void begin(Phase p);            // device phase: records on the compute stream
  void end(Phase p);
  void end_step();
  // Adds a host-timed phase (and its timeline entry).
  void add_host(Phase p, double start, double end);
  // Reads every pending step (synchronizes); call before the timers are reduced.
  void flush();

 private:
  struct Run {
    std::unique_ptr<Event> begin, end;
  };
  struct Marks {
    int64_t step = -1;
    bool pending = false;
    std::array<size_t, kPhaseCount> runs{};        // this step's runs of each phase
    std::array<std::vector<Run>, kPhaseCount> events;  // made as runs need them, then reused
  };
  void harvest(Marks& m);
  Marks& add_marks();

  Backend& backend_;
  PhaseTimers& timers_;
  Timeline& timeline_;
  std::vector<std::unique_ptr<Marks>> ring_;
  Marks* cur_ = nullptr;
};

}  // namespace scaletrain::train
