// KernelTrace: the device's own record of the kernels it ran (run.profile = kernels). On cuda it is
// CUPTI's activity API, loaded at run time (backend/cuda/cupti_kernel_trace.hpp); on sim, the work
// items of the streams, each timed by its worker under the label it was queued with. Records are
// per kernel name: how many ran and their summed device time while the trace was on.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace scaletrain {

struct KernelRecord {
  std::string name;   // demangled kernel name (cuda), or the work item's label (sim); "memcpy HtoD" etc. for copies
  int64_t count = 0;  // kernels of this name that ran while tracing
  double seconds = 0; // their device time, summed
};

class KernelTrace {
 public:
  virtual ~KernelTrace() = default;
  // "CUPTI 13.0 activity records (libcupti.so.13 from /usr/local/cuda/...)", "sim streams' work items"
  virtual std::string source() const = 0;
  // Records kernels from now on (work queued before may still be recorded if it runs after).
  virtual void start() = 0;
  // Stops recording once the device has run what was queued before (synchronizes).
  virtual void stop() = 0;
  // Everything recorded since the last take(), by name, largest summed time first.
  virtual std::vector<KernelRecord> take() = 0;
};

}  // namespace scaletrain
