// DeviceStepCounts: the backend's DeviceCounters (backend/device_counters.hpp) cut into steps and
// phases, for run.json's device_per_step. A step's window runs from its start to the next step's
// start, so the logging, checkpoint and other work after a step is its own: a step with a logging
// interval or a checkpoint after it is a logging step, counted apart from the plain steps, and an
// evaluation is counted apart as a whole. Only measured steps (after train.warmup_log_steps) count.
// Reading the counters is a few relaxed loads per phase: nothing is added to the device's work.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scaletrain/backend/device_counters.hpp"
#include "scaletrain/core/timer.hpp"

namespace scaletrain::train {

// Per counter, the median and the maximum over a group of steps (or evaluations).
struct CountStats {
  DeviceCounts median, max;
};

struct DeviceStepGroup {
  int64_t steps = 0;
  CountStats step;                              // the whole window
  std::array<CountStats, kPhaseCount> phases;   // each phase of the step
  std::array<bool, kPhaseCount> phase_used{};
  CountStats outside_phases;                    // the window less its phases (logging, checkpoints)
};

struct DevicePerStep {
  DeviceStepGroup plain, logging;
  int64_t evaluations = 0;
  CountStats evaluation;
};

class DeviceStepCounts {
 public:
  explicit DeviceStepCounts(DeviceCounters& counters) : counters_(counters) {}

  // Closes the open step, if any, and opens the next one's window; `measured` once past the warm-up.
  void begin_step(bool measured);
  void begin_phase() { phase_start_ = counters_.read(); }
  void end_phase(Phase p);
  // The open step is followed by a logging interval or a checkpoint.
  void mark_logging() { open_logging_ = true; }
  // Ends the open step's window (before an evaluation, at the end of the run).
  void close_step();
  void begin_evaluation();
  void end_evaluation();

  // The first measured plain step's counts, once it has closed (for the line after the warm-up).
  bool first_measured_ready() const { return !plain_.empty(); }
  const DeviceCounts& first_measured() const { return plain_.front().total; }
  DevicePerStep summary() const;

 private:
  struct StepCounts {
    DeviceCounts total;
    std::array<DeviceCounts, kPhaseCount> phases{};
    std::array<bool, kPhaseCount> used{};
  };
  DeviceCounters& counters_;
  DeviceCounts step_start_, phase_start_, eval_start_;
  StepCounts open_;
  bool open_measured_ = false, open_logging_ = false, step_open_ = false;
  std::vector<StepCounts> plain_, logging_;
  std::vector<DeviceCounts> evaluations_;
};

// "1,184 calls, 1 host sync, 0 allocations, 2 copies to the device (1.2 MB), 0 back"
std::string device_counts_line(const DeviceCounts& c);
nlohmann::json device_per_step_json(const DevicePerStep& d);

}  // namespace scaletrain::train
