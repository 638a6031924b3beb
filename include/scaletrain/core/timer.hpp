// Wall-clock timing: a steady-clock stopwatch and PhaseTimers, the per-step phase accumulator
// (data_wait, h2d, input, forward, backward, allreduce_exposed, agree, optimizer, step).
#pragma once
#include <array>
#include <chrono>
#include <string_view>

namespace scaletrain {

inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

class Stopwatch {
 public:
  Stopwatch() : start_(now_seconds()) {}
  void reset() { start_ = now_seconds(); }
  double seconds() const { return now_seconds() - start_; }

 private:
  double start_;
};

// h2d: the batch's host-to-device copy (on the copy stream; zero where the device is the host);
// input: normalization and augmentation on the device; agree: the inf/NaN check of the reduced
// gradients and the step's one agreement across ranks (train/step_agreement.hpp).
enum class Phase : int { data_wait, h2d, input, forward, backward, allreduce_exposed, agree, optimizer, step, count };
constexpr int kPhaseCount = static_cast<int>(Phase::count);
std::string_view phase_name(Phase p);

// Accumulates seconds per phase over an interval of steps.
class PhaseTimers {
 public:
  void add(Phase p, double seconds) { total_[static_cast<int>(p)] += seconds; }
  double get(Phase p) const { return total_[static_cast<int>(p)]; }
  const std::array<double, kPhaseCount>& all() const { return total_; }
  void reset() { total_.fill(0.0); }

 private:
  std::array<double, kPhaseCount> total_{};
};

// Adds the scope's duration to one phase.
class ScopedPhase {
 public:
  ScopedPhase(PhaseTimers& t, Phase p) : timers_(t), phase_(p), start_(now_seconds()) {}
  ~ScopedPhase() { timers_.add(phase_, now_seconds() - start_); }
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  PhaseTimers& timers_;
  Phase phase_;
  double start_;
};

}  // namespace scaletrain
