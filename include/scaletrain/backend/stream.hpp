// Streams and events of a Backend. A Stream runs the work queued on it in order; an Event marks a
// point in a stream's queue, and other streams (or the host) can wait for it. On the CPU backend a
// stream runs each piece of work inside the call that queues it and an event completes when it is
// recorded; on the simulated and CUDA devices work is asynchronous: it has not run when the call
// returns, and only an event (or a synchronize) says that it has.
#pragma once
#include <functional>
#include <string>

#include "scaletrain/backend/device_counters.hpp"

namespace scaletrain {

class Event {
 public:
  virtual ~Event() = default;
  const std::string& label() const { return label_; }
  // Whether the work before the last record() has completed (true when never recorded).
  virtual bool query() = 0;
  // Blocks the calling host thread until query() is true; one host synchronization.
  void synchronize() {
    counters_->host_sync();
    block();
  }
  // Steady-clock seconds (as now_seconds()) at which the event completed on its stream; valid
  // once query() is true. Two events' difference is the device time between them.
  virtual double completion_time() = 0;

  // The counters of the backend that made this event (backend/device_counters.hpp).
  DeviceCounters& counters() const { return *counters_; }
  void count_into(DeviceCounters& c) { counters_ = &c; }

 protected:
  explicit Event(std::string label) : label_(std::move(label)) {}
  // What synchronize() waits with.
  virtual void block() = 0;

 private:
  std::string label_;
  DeviceCounters* counters_ = &DeviceCounters::unattached();
};

class Stream {
 public:
  virtual ~Stream() = default;
  const std::string& name() const { return name_; }
  // True when work runs inside the call that queues it (the CPU backend).
  virtual bool runs_inline() const = 0;
  // The cudaStream_t of a CUDA stream (kernels/ functors are launched on it); null on other devices.
  virtual void* cuda_handle() const { return nullptr; }
  // Queues host-executable work (a kernel launch, a heavy op, a copy) after everything queued
  // before it. An exception thrown by the work is raised by a later call on this stream. On CUDA
  // the work runs on a host thread of the runtime (cudaLaunchHostFunc) and must not touch device
  // memory or call CUDA.
  virtual void enqueue(std::function<void()> work) = 0;
  // The same, for work a device would run as a kernel or library call: `label` (a string literal)
  // names it in the simulated device's kernel trace (run.profile = kernels).
  virtual void enqueue_kernel(const char* label, std::function<void()> work) {
    (void)label;
    enqueue(std::move(work));
  }
  // Marks this point of the queue in `e`.
  virtual void record(Event& e) = 0;
  // Work queued on this stream after this call waits until `e` (as last recorded) completes. The
  // host does not block.
  virtual void wait(Event& e) = 0;
  // Blocks the host until everything queued so far has run; rethrows the first error of the work.
  // One host synchronization.
  void synchronize() {
    counters_->host_sync();
    drain();
  }

  // The counters of the backend that owns this stream (backend/device_counters.hpp).
  DeviceCounters& counters() const { return *counters_; }
  void count_into(DeviceCounters& c) { counters_ = &c; }

 protected:
  explicit Stream(std::string name) : name_(std::move(name)) {}
  // What synchronize() waits with.
  virtual void drain() = 0;

 private:
  std::string name_;
  DeviceCounters* counters_ = &DeviceCounters::unattached();
};

}  // namespace scaletrain
