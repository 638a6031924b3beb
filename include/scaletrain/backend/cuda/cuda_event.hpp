// CudaEvent: a timing-enabled cudaEvent_t behind the Event interface. It remembers the clock anchor
// current when it was last recorded, so completion_time() is steady-clock seconds measured on the
// device (backend/cuda/device_clock.hpp), never a host clock read around an asynchronous call.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <string>

#include "scaletrain/backend/cuda/device_clock.hpp"
#include "scaletrain/backend/stream.hpp"

namespace scaletrain::cuda {

class CudaEvent final : public Event {
 public:
  CudaEvent(std::string label, int device, std::shared_ptr<DeviceClock> clock);
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  bool query() override;
  void block() override;
  // Waits for the event if it has not completed; an Error when it was never recorded.
  double completion_time() override;

  // CudaStream's side: record on `stream`, make `stream` wait (nothing when never recorded).
  void record_on(cudaStream_t stream);
  void wait_on(cudaStream_t stream);

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
  std::shared_ptr<DeviceClock> clock_;
  std::mutex mu_;  // record (reader thread) against wait, query and time (another thread)
  std::shared_ptr<const ClockAnchor> anchor_;  // null: never recorded
};

}  // namespace scaletrain::cuda
