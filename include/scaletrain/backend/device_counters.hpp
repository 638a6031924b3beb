// DeviceCounters: what the host asks of a device, counted where it is asked (run.json's
// device_per_step, train/device_step_counts.hpp). A GPU's step is slow for reasons a profiler shows
// only on a GPU: too many launches, a host that waits for the device, allocations, copies. These
// counts are the same on every backend, so the simulated device measures them without a GPU.
//   calls:       each functor launch, heavy-operator call and library call (cuDNN, cuBLASLt, NCCL,
//                oneDNN), each fill;
//   host_syncs:  each time the host waits for the device: a stream, event or device synchronize, a
//                download, a loop polling an event; made by the training thread (background_syncs:
//                made by threads that do not hold up the step, the loader's reader and the
//                communication thread, which mark themselves with mark_background_thread());
//   allocations: device tensors allocated;
//   copies:      host-to-device and device-to-host copies, and their bytes.
// Counting is a relaxed atomic add per call; a backend owns one DeviceCounters and hands it to its
// streams and events.
#pragma once
#include <atomic>
#include <cstdint>

namespace scaletrain {

struct DeviceCounts {
  int64_t calls = 0;
  int64_t host_syncs = 0;
  int64_t background_syncs = 0;
  int64_t allocations = 0;
  int64_t copies_h2d = 0, bytes_h2d = 0;
  int64_t copies_d2h = 0, bytes_d2h = 0;

  DeviceCounts& operator+=(const DeviceCounts& o);
  friend DeviceCounts operator-(DeviceCounts a, const DeviceCounts& b);
  bool operator==(const DeviceCounts&) const = default;
};

class DeviceCounters {
 public:
  void call(int64_t n = 1) { calls_.fetch_add(n, std::memory_order_relaxed); }
  void host_sync() { (background_thread() ? background_syncs_ : host_syncs_).fetch_add(1, std::memory_order_relaxed); }
  void allocation() { allocations_.fetch_add(1, std::memory_order_relaxed); }
  void copy_to_device(int64_t bytes);
  void copy_to_host(int64_t bytes);
  DeviceCounts read() const;

  // The counters of streams and events that no backend has attached to its own (never read).
  static DeviceCounters& unattached();
  // The calling thread's waits count as background_syncs from now on.
  static void mark_background_thread() { background_thread() = true; }

 private:
  static bool& background_thread() {
    thread_local bool background = false;
    return background;
  }
  std::atomic<int64_t> calls_{0}, host_syncs_{0}, background_syncs_{0}, allocations_{0};
  std::atomic<int64_t> copies_h2d_{0}, bytes_h2d_{0}, copies_d2h_{0}, bytes_d2h_{0};
};

}  // namespace scaletrain
