// Timeline: clock alignment, event buffer and Chrome-trace output.
#include "scaletrain/train/timeline.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/train/json_file.hpp"

namespace scaletrain::train {

Timeline::Timeline(comm::Communicator& comm, bool enabled) : comm_(comm), enabled_(enabled) {
  if (!enabled_) return;
  events_.reserve(1 << 16);
  // Offset estimate per rank: rank 0 broadcasts its clock repeatedly; each rank keeps the sample
  // whose round trip (measured by a barrier) was shortest. Cristian's algorithm over MPI.
  double best_rtt = 1e30;
  for (int i = 0; i < 8; ++i) {
    comm_.barrier();
    const double t0 = now_seconds();
    double root_time = t0;
    comm_.broadcast(&root_time, sizeof root_time, 0);
    const double t1 = now_seconds();
    if (t1 - t0 < best_rtt) {
      best_rtt = t1 - t0;
      offset_ = root_time - (t0 + t1) / 2;
    }
  }
  if (comm_.rank() == 0) offset_ = 0;
  origin_ = now_seconds() + offset_;
  comm_.broadcast(&origin_, sizeof origin_, 0);
}

void Timeline::record(const char* name, double start, double end, int lane, int64_t step) {
  if (!enabled_) return;
  Event e{};
  std::snprintf(e.name, sizeof e.name, "%s", name);
  e.start = start + offset_ - origin_;
  e.end = end + offset_ - origin_;
  e.lane = lane;
  e.step = step;
  events_.push_back(e);
}

namespace {
// A resumed run's trace: the events of the earlier runs in `path` (if any) go into `ev`; returns the
// time, in microseconds, after which the new events go (1 ms after the last earlier one ends).
double keep_earlier_events(const std::string& path, nlohmann::json& ev) {
  std::ifstream in(path);
  if (!in) return 0.0;
  nlohmann::json old;
  try {
    in >> old;
  } catch (const std::exception&) {
    return 0.0;  // an unreadable trace is replaced, not fatal
  }
  double end = 0;
  for (const auto& e : old.value("traceEvents", nlohmann::json::array())) {
    if (e.contains("ts")) end = std::max(end, e["ts"].get<double>() + e.value("dur", 0.0));
    ev.push_back(e);
  }
  return end + 1e3;
}
}  // namespace

void Timeline::write(const std::string& path, const std::string& resumed_from) {
  if (!enabled_) return;
  // Every rank sends its count, then its events, to rank 0.
  int64_t mine = static_cast<int64_t>(events_.size());
  std::vector<int64_t> counts(static_cast<size_t>(comm_.size()));
  comm_.allgather(&mine, sizeof mine, counts.data());
  int64_t most = 0;
  for (int64_t c : counts) most = std::max(most, c);
  std::vector<Event> padded(static_cast<size_t>(most));
  std::copy(events_.begin(), events_.end(), padded.begin());
  std::vector<Event> all(comm_.rank() == 0 ? static_cast<size_t>(most) * static_cast<size_t>(comm_.size()) : 1);
  comm_.gather(padded.data(), most * static_cast<int64_t>(sizeof(Event)), all.data(), 0);
  if (comm_.rank() != 0) return;
  nlohmann::json trace;
  trace["displayTimeUnit"] = "ms";
  auto& ev = trace["traceEvents"];
  ev = nlohmann::json::array();
  const double shift_us = resumed_from.empty() ? 0.0 : keep_earlier_events(path, ev);
  if (!resumed_from.empty())
    ev.push_back({{"name", "resumed_from"}, {"ph", "i"}, {"s", "g"}, {"pid", 0}, {"tid", 0}, {"ts", shift_us},
                  {"args", {{"checkpoint", resumed_from}}}});
  for (int r = 0; r < comm_.size(); ++r) {
    ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"args", {{"name", "rank " + std::to_string(r)}}}});
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", 0}, {"args", {{"name", "compute"}}}});
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", 1}, {"args", {{"name", "all-reduce"}}}});
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", 2}, {"args", {{"name", "copy"}}}});
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", 3}, {"args", {{"name", "host"}}}});
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", 4}, {"args", {{"name", "staging"}}}});
    for (int64_t i = 0; i < counts[static_cast<size_t>(r)]; ++i) {
      const Event& e = all[static_cast<size_t>(r) * static_cast<size_t>(most) + static_cast<size_t>(i)];
      nlohmann::json j = {{"name", e.name}, {"ph", "X"},  {"pid", r}, {"tid", e.lane},
                          {"ts", shift_us + e.start * 1e6}, {"dur", (e.end - e.start) * 1e6}};
      if (e.step >= 0) j["args"] = {{"step", e.step}};
      ev.push_back(std::move(j));
    }
  }
  write_json_file(path, trace, -1);
}

}  // namespace scaletrain::train
