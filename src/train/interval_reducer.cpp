// IntervalReducer: interval, epoch and run figures (train/interval_reducer.hpp).
#include "scaletrain/train/interval_reducer.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace scaletrain::train {
namespace {

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

// Per-rank GPU telemetry rides on the phase-time gather: these slots follow the phase times.
enum GpuSlot { kSmClock, kSmClockMax, kTemperature, kPower, kMemoryUsed, kReasons, kGpuSlots };

void pack_gpu(const std::optional<GpuSample>& g, double* out) {
  const GpuSample s = g.value_or(GpuSample{});
  out[kSmClock] = s.sm_clock_mhz;
  out[kSmClockMax] = s.sm_clock_max_mhz;
  out[kTemperature] = s.temperature_c;
  out[kPower] = s.power_w;
  out[kMemoryUsed] = s.memory_used_mib;
  out[kReasons] = static_cast<double>(s.clock_event_reasons);
}

// A rank's sample from its slots; false when it has no telemetry at all.
bool unpack_gpu(const double* in, GpuSample& s) {
  s.sm_clock_mhz = in[kSmClock];
  s.sm_clock_max_mhz = in[kSmClockMax];
  s.temperature_c = in[kTemperature];
  s.power_w = in[kPower];
  s.memory_used_mib = in[kMemoryUsed];
  s.clock_event_reasons = static_cast<int64_t>(in[kReasons]);
  bool any = s.clock_event_reasons >= 0;
  for (int k = 0; k < kReasons; ++k) any = any || !std::isnan(in[k]);
  return any;
}

// Every rank's phase times of the interval (and its total all-reduce time), gathered: mean, min,
// max and the slowest rank per phase; and every rank's GPU sample, kept per rank when any rank has
// one. One allgather, with or without telemetry.
void reduce_phase_times(comm::Communicator& comm, const PhaseTimers& timers, double allreduce_seconds,
                        const std::optional<GpuSample>& gpu, IntervalTimings& it) {
  constexpr size_t kPerRank = kPhaseCount + 1 + kGpuSlots;
  std::vector<double> mine(kPerRank);
  for (int p = 0; p < kPhaseCount; ++p) mine[static_cast<size_t>(p)] = timers.all()[static_cast<size_t>(p)];
  mine[kPhaseCount] = allreduce_seconds;
  pack_gpu(gpu, mine.data() + kPhaseCount + 1);
  std::vector<double> all(kPerRank * static_cast<size_t>(comm.size()));
  comm.allgather(mine.data(), static_cast<int64_t>(kPerRank * sizeof(double)), all.data());
  const int world = comm.size();
  for (int p = 0; p <= kPhaseCount; ++p) {
    double sum = 0, mn = 1e300, mx = -1;
    int slow = 0;
    for (int r = 0; r < world; ++r) {
      const double v = all[static_cast<size_t>(r) * kPerRank + static_cast<size_t>(p)];
      sum += v;
      mn = std::min(mn, v);
      if (v > mx) {
        mx = v;
        slow = r;
      }
    }
    if (p == kPhaseCount) {
      it.allreduce_total_mean = sum / world;
    } else {
      it.mean[p] = sum / world;
      it.min[p] = mn;
      it.max[p] = mx;
      it.slowest_rank[p] = slow;
    }
  }
  std::vector<GpuSample> gpus(static_cast<size_t>(world));
  bool any = false;
  for (int r = 0; r < world; ++r)
    any = unpack_gpu(all.data() + static_cast<size_t>(r) * kPerRank + kPhaseCount + 1, gpus[static_cast<size_t>(r)]) ||
          any;
  if (any) it.gpus = std::move(gpus);
}

}  // namespace

IntervalReducer::IntervalReducer(comm::Communicator& comm, int64_t global_batch, int64_t warmup_log_steps,
                                 int64_t first_step)
    : comm_(comm), global_batch_(global_batch), warmup_log_steps_(warmup_log_steps),
      first_step_(first_step),
      interval_first_(first_step) {}

IntervalTimings IntervalReducer::close_interval(int64_t epoch, int64_t step, const nn::LossResult& sums,
                                                const PhaseTimers& timers, double allreduce_seconds,
                                                const std::optional<GpuSample>& gpu) {
  epoch_sums_.loss_sum += sums.loss_sum;
  epoch_sums_.correct += sums.correct;
  epoch_sums_.count += sums.count;
  IntervalTimings it;
  it.epoch = epoch;
  it.first_step = interval_first_;
  it.steps = step - interval_first_;
  it.warmup = interval_first_ - first_step_ < warmup_log_steps_;  // a resumed process warms up again
  reduce_phase_times(comm_, timers, allreduce_seconds, gpu, it);
  it.wall_seconds = interval_clock_.seconds();
  it.elapsed_seconds = run_clock_.seconds();
  it.samples_per_second = static_cast<double>(it.steps * global_batch_) / it.wall_seconds;
  it.loss = ratio(sums.loss_sum, static_cast<double>(sums.count));
  it.accuracy = ratio(static_cast<double>(sums.correct), static_cast<double>(sums.count));
  if (!it.warmup) {
    measured_seconds_ += it.wall_seconds;
    measured_steps_ += it.steps;
    for (int p = 0; p < kPhaseCount; ++p) phase_sums_[p] += it.mean[p];
    allreduce_total_ += it.allreduce_total_mean;
  }
  interval_first_ = step;
  interval_clock_.reset();
  return it;
}

void IntervalReducer::begin_epoch() { epoch_clock_.reset(); }

EpochReport IntervalReducer::close_epoch(int64_t epoch, int64_t steps) {
  EpochReport rep;
  rep.epoch = epoch;
  rep.steps = steps;
  rep.train_loss = ratio(epoch_sums_.loss_sum, static_cast<double>(epoch_sums_.count));
  rep.train_accuracy = ratio(static_cast<double>(epoch_sums_.correct), static_cast<double>(epoch_sums_.count));
  rep.seconds = epoch_clock_.seconds();
  rep.samples_per_second = static_cast<double>(steps * global_batch_) / rep.seconds;
  epoch_sums_ = nn::LossResult{};
  return rep;
}

void IntervalReducer::finish(TrainResult& result, int64_t steps) const {
  result.steps = steps;
  result.seconds = run_clock_.seconds();
  result.mean_samples_per_second = ratio(static_cast<double>(measured_steps_ * global_batch_), measured_seconds_);
  const double step_total = phase_sums_[static_cast<int>(Phase::step)];
  result.exposed_allreduce_share = ratio(phase_sums_[static_cast<int>(Phase::allreduce_exposed)], step_total);
  result.allreduce_total_share = ratio(allreduce_total_, step_total);
}

}  // namespace scaletrain::train
