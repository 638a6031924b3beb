// DeviceClock: a CUDA event's completion in steady-clock seconds (as now_seconds()): the host time of
// an anchor event (recorded on an idle stream and synchronized) plus cudaEventElapsedTime from it.
// Anchors are renewed every refresh_seconds, so float milliseconds keep microseconds in long runs.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <mutex>

namespace scaletrain::cuda {

// An event that completed at a known host time; immutable, destroyed with its last user.
struct ClockAnchor {
  cudaEvent_t event = nullptr;
  double host_seconds = 0;  // now_seconds() when the event completed on the device
  ClockAnchor() = default;
  ClockAnchor(const ClockAnchor&) = delete;
  ClockAnchor& operator=(const ClockAnchor&) = delete;
  ~ClockAnchor();
};

class DeviceClock {
 public:
  // Records the first anchor on `device` (the backend's start-up).
  explicit DeviceClock(int device, double refresh_seconds = 10.0);
  ~DeviceClock();
  DeviceClock(const DeviceClock&) = delete;
  DeviceClock& operator=(const DeviceClock&) = delete;

  // The anchor for an event recorded now: it completed before the event can, so elapsed times from
  // it are never negative. Renewed here when older than refresh_seconds.
  std::shared_ptr<const ClockAnchor> anchor_for_record();

  // Steady-clock seconds at which `event` (recorded after `anchor` was taken, and complete) completed.
  static double seconds_at(const ClockAnchor& anchor, cudaEvent_t event);

 private:
  std::shared_ptr<const ClockAnchor> make_anchor();

  int device_;
  double refresh_seconds_;
  cudaStream_t stream_ = nullptr;  // idle but for the anchors, so an anchor completes as it is recorded
  std::mutex mu_;
  std::shared_ptr<const ClockAnchor> current_;
};

}  // namespace scaletrain::cuda
