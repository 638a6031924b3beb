// Timeline: an opt-in Chrome-trace / Perfetto JSON of every rank's phases and gradient-bucket
// all-reduces on one time axis (like Horovod's timeline). Clocks are aligned to rank 0 through MPI
// ping-pongs at start; events are buffered in memory and gathered to rank 0 at the end.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::train {

class Timeline {
 public:
  // Measures this rank's clock offset to rank 0 (collective).
  Timeline(comm::Communicator& comm, bool enabled);
  bool enabled() const { return enabled_; }
  // Records one complete event; `lane` 0 is compute, 1 is communication, 2 is the host-to-device
  // copy stream, 3 the host-timed phases of a device backend, 4 staging (the data sets' start-up
  // load and the exchange between nodes). Times from now_seconds().
  void record(const char* name, double start, double end, int lane = 0, int64_t step = -1);
  // Collective: gathers every rank's events to rank 0, which writes the trace to `path`. A resumed
  // run (resumed_from: the checkpoint) goes on after the events already in `path`, with a
  // "resumed_from" instant event between the two.
  void write(const std::string& path, const std::string& resumed_from = "");
  double clock_offset() const { return offset_; }
  size_t size() const { return events_.size(); }

 private:
  struct Event {
    char name[24];
    double start, end;
    int32_t lane;
    int64_t step;
  };
  comm::Communicator& comm_;
  bool enabled_;
  double offset_ = 0;  // add to local time to get rank 0's time
  double origin_ = 0;  // rank 0's time at construction
  std::vector<Event> events_;
};

}  // namespace scaletrain::train
