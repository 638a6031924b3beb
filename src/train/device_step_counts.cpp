// DeviceStepCounts: steps and phases of the device counters, their medians and maxima, run.json's
// device_per_step (train/device_step_counts.hpp).
#include "scaletrain/train/device_step_counts.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>

namespace scaletrain::train {
namespace {

// The counters as members, for statistics taken one counter at a time.
constexpr std::array<int64_t DeviceCounts::*, 8> kFields{
    &DeviceCounts::calls,      &DeviceCounts::host_syncs, &DeviceCounts::background_syncs, &DeviceCounts::allocations,
    &DeviceCounts::copies_h2d, &DeviceCounts::bytes_h2d,  &DeviceCounts::copies_d2h,       &DeviceCounts::bytes_d2h};
constexpr std::array<const char*, 8> kFieldNames{"calls",      "host_syncs", "background_syncs", "allocations",
                                                 "copies_h2d", "bytes_h2d",  "copies_d2h",       "bytes_d2h"};

// Median (the lower middle of an even count: a count that happened) and maximum per counter.
CountStats stats_of(const std::vector<DeviceCounts>& v) {
  CountStats s;
  if (v.empty()) return s;
  for (auto field : kFields) {
    std::vector<int64_t> x;
    x.reserve(v.size());
    for (const DeviceCounts& c : v) x.push_back(c.*field);
    std::sort(x.begin(), x.end());
    s.median.*field = x[(x.size() - 1) / 2];
    s.max.*field = x.back();
  }
  return s;
}

template <class Steps, class Pick>
CountStats stats_over(const Steps& steps, Pick pick) {
  std::vector<DeviceCounts> v;
  for (const auto& s : steps) v.push_back(pick(s));
  return stats_of(v);
}

std::string thousands(int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string s = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

std::string plural(int64_t n, const char* one, const char* many) { return thousands(n) + " " + (n == 1 ? one : many); }

std::string megabytes(int64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return b;
}

nlohmann::json counts_json(const DeviceCounts& c) {
  nlohmann::json j;
  for (size_t k = 0; k < kFields.size(); ++k) j[kFieldNames[k]] = c.*kFields[k];
  return j;
}

nlohmann::json stats_json(const CountStats& s) { return {{"median", counts_json(s.median)}, {"max", counts_json(s.max)}}; }

nlohmann::json group_json(const DeviceStepGroup& g) {
  nlohmann::json j = {{"steps", g.steps}};
  if (g.steps == 0) return j;
  j["step"] = stats_json(g.step);
  nlohmann::json phases = nlohmann::json::object();
  for (int p = 0; p < kPhaseCount; ++p)
    if (g.phase_used[static_cast<size_t>(p)])
      phases[std::string(phase_name(static_cast<Phase>(p)))] = stats_json(g.phases[static_cast<size_t>(p)]);
  j["phases"] = phases;
  j["outside_phases"] = stats_json(g.outside_phases);
  return j;
}

}  // namespace

void DeviceStepCounts::begin_step(bool measured) {
  close_step();
  open_ = StepCounts{};
  open_measured_ = measured;
  open_logging_ = false;
  step_open_ = true;
  step_start_ = counters_.read();
}

void DeviceStepCounts::end_phase(Phase p) {
  const auto i = static_cast<size_t>(p);
  open_.phases[i] += counters_.read() - phase_start_;
  open_.used[i] = true;
}

void DeviceStepCounts::close_step() {
  if (!step_open_) return;
  step_open_ = false;
  if (!open_measured_) return;
  open_.total = counters_.read() - step_start_;
  (open_logging_ ? logging_ : plain_).push_back(open_);
}

void DeviceStepCounts::begin_evaluation() {
  close_step();
  eval_start_ = counters_.read();
}

void DeviceStepCounts::end_evaluation() { evaluations_.push_back(counters_.read() - eval_start_); }

DevicePerStep DeviceStepCounts::summary() const {
  auto group = [](const std::vector<StepCounts>& steps) {
    DeviceStepGroup g;
    g.steps = static_cast<int64_t>(steps.size());
    g.step = stats_over(steps, [](const StepCounts& s) { return s.total; });
    for (size_t p = 0; p < static_cast<size_t>(kPhaseCount); ++p) {
      g.phases[p] = stats_over(steps, [p](const StepCounts& s) { return s.phases[p]; });
      g.phase_used[p] = std::any_of(steps.begin(), steps.end(), [p](const StepCounts& s) { return s.used[p]; });
    }
    g.outside_phases = stats_over(steps, [](const StepCounts& s) {
      DeviceCounts rest = s.total;
      for (const DeviceCounts& c : s.phases) rest = rest - c;
      return rest;
    });
    return g;
  };
  DevicePerStep d;
  d.plain = group(plain_);
  d.logging = group(logging_);
  d.evaluations = static_cast<int64_t>(evaluations_.size());
  d.evaluation = stats_of(evaluations_);
  return d;
}

std::string device_counts_line(const DeviceCounts& c) {
  return plural(c.calls, "call", "calls") + ", " + plural(c.host_syncs, "host sync", "host syncs") + ", " +
         plural(c.allocations, "allocation", "allocations") + ", " +
         plural(c.copies_h2d, "copy", "copies") + " to the device (" + megabytes(c.bytes_h2d) + "), " +
         thousands(c.copies_d2h) + " back (" + megabytes(c.bytes_d2h) + ")";
}

nlohmann::json device_per_step_json(const DevicePerStep& d) {
  nlohmann::json j = {{"plain_steps", group_json(d.plain)}, {"logging_steps", group_json(d.logging)},
                      {"evaluations", {{"count", d.evaluations}}}};
  if (d.evaluations > 0) j["evaluations"]["each"] = stats_json(d.evaluation);
  return j;
}

}  // namespace scaletrain::train
