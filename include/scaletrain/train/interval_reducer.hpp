// IntervalReducer: the figures of a run, interval by interval. It turns one logging interval's
// loss sums (already reduced over ranks) and phase times (reduced here: mean, min, max, slowest
// rank; every rank's GPU telemetry sample, kept per rank, rides on the same gather) into
// IntervalTimings, sums intervals into the epoch's training loss and accuracy, and keeps the
// non-warm-up totals that give the run's throughput and all-reduce shares.
#pragma once
#include <cstdint>
#include <optional>

#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/nn/softmax_cross_entropy.hpp"
#include "scaletrain/train/gpu_telemetry.hpp"
#include "scaletrain/train/trainer.hpp"

namespace scaletrain::train {

class IntervalReducer {
 public:
  // `first_step`: the global step the run starts at (a resumed run's checkpoint step).
  IntervalReducer(comm::Communicator& comm, int64_t global_batch, int64_t warmup_log_steps, int64_t first_step);

  // Collective. Closes the interval of the steps before `step` in `epoch`; lr, loss scale and
  // skipped steps are the caller's to fill in. `gpu`: this rank's GPU telemetry sample, if any
  // (gathered with the phase times, in the same allgather).
  IntervalTimings close_interval(int64_t epoch, int64_t step, const nn::LossResult& sums, const PhaseTimers& timers,
                                 double allreduce_seconds, const std::optional<GpuSample>& gpu = std::nullopt);
  void begin_epoch();
  // The epoch's training loss, accuracy, time and throughput over its intervals (evaluation is the
  // caller's); the epoch sums start again.
  EpochReport close_epoch(int64_t epoch, int64_t steps);
  // Evaluation is outside every interval: the next interval's clock starts after it.
  void restart_interval_clock() { interval_clock_.reset(); }
  // Steps, seconds, mean throughput and all-reduce shares of the whole run.
  void finish(TrainResult& result, int64_t steps) const;

 private:
  comm::Communicator& comm_;
  int64_t global_batch_, warmup_log_steps_;
  int64_t first_step_, interval_first_;
  nn::LossResult epoch_sums_;
  Stopwatch run_clock_, interval_clock_, epoch_clock_;
  // Totals over the timed (non-warm-up) intervals.
  double measured_seconds_ = 0;
  int64_t measured_steps_ = 0;
  double phase_sums_[kPhaseCount] = {};
  double allreduce_total_ = 0;
};

}  // namespace scaletrain::train
