// PhaseClock: device phases through compute-stream events in a ring of steps, host phases by clock.
#include "scaletrain/train/phase_clock.hpp"

#include <algorithm>

#include "scaletrain/core/error.hpp"

namespace scaletrain::train {

PhaseClock::PhaseClock(Backend& backend, PhaseTimers& timers, Timeline& timeline, int depth)
    : backend_(backend), timers_(timers), timeline_(timeline) {
  ST_CHECK(depth >= 1, "PhaseClock depth must be >= 1");
  for (int i = 0; i < depth; ++i) add_marks();
}

PhaseClock::Marks& PhaseClock::add_marks() {
  ring_.push_back(std::make_unique<Marks>());
  return *ring_.back();
}

void PhaseClock::begin_step(int64_t step) {
  Marks* free = nullptr;
  for (auto& m : ring_)
    if (!m->pending) {
      free = m.get();
      break;
    }
  Marks& m = free ? *free : add_marks();
  m.step = step;
  m.runs.fill(0);
  cur_ = &m;
}

void PhaseClock::begin(Phase p) {
  const auto i = static_cast<size_t>(p);
  std::vector<Run>& runs = cur_->events[i];
  if (cur_->runs[i] == runs.size()) {
    const std::string name(phase_name(p));
    runs.push_back(Run{backend_.make_event(name + " begin"), backend_.make_event(name + " end")});
  }
  backend_.compute_stream().record(*runs[cur_->runs[i]++].begin);
}

void PhaseClock::end(Phase p) {
  const auto i = static_cast<size_t>(p);
  ST_CHECK(cur_->runs[i] > 0, "PhaseClock: ", phase_name(p), " ended without a begin");
  backend_.compute_stream().record(*cur_->events[i][cur_->runs[i] - 1].end);
}

void PhaseClock::end_step() {
  cur_->pending = true;
  // Read every finished step now (all of them on the CPU backend), oldest first.
  std::vector<Marks*> done;
  for (auto& m : ring_) {
    if (!m->pending) continue;
    bool complete = true;
    for (int p = 0; p < kPhaseCount && complete; ++p)
      if (const size_t n = m->runs[static_cast<size_t>(p)]; n > 0)
        complete = m->events[static_cast<size_t>(p)][n - 1].end->query();
    if (complete) done.push_back(m.get());
  }
  std::sort(done.begin(), done.end(), [](const Marks* a, const Marks* b) { return a->step < b->step; });
  for (Marks* m : done) harvest(*m);
}

void PhaseClock::add_host(Phase p, double start, double end) {
  timers_.add(p, end - start);
  // On an asynchronous device the host runs ahead of the compute stream: its phases get their own track.
  const int lane = backend_.compute_stream().runs_inline() ? 0 : 3;
  if (timeline_.enabled()) timeline_.record(phase_name(p).data(), start, end, lane, cur_ ? cur_->step : -1);
}

void PhaseClock::flush() {
  std::vector<Marks*> pending;
  for (auto& m : ring_)
    if (m->pending) pending.push_back(m.get());
  std::sort(pending.begin(), pending.end(), [](const Marks* a, const Marks* b) { return a->step < b->step; });
  for (Marks* m : pending) harvest(*m);
}

void PhaseClock::harvest(Marks& m) {
  for (int p = 0; p < kPhaseCount; ++p) {
    for (size_t r = 0; r < m.runs[static_cast<size_t>(p)]; ++r) {
      Event& b = *m.events[static_cast<size_t>(p)][r].begin;
      Event& e = *m.events[static_cast<size_t>(p)][r].end;
      if (!e.query()) e.synchronize();  // a wait only where the device has not got there yet
      const double t0 = b.completion_time(), t1 = e.completion_time();
      timers_.add(static_cast<Phase>(p), t1 - t0);
      if (timeline_.enabled()) timeline_.record(phase_name(static_cast<Phase>(p)).data(), t0, t1, 0, m.step);
    }
  }
  m.pending = false;
}

}  // namespace scaletrain::train
