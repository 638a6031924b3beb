// CudaEvent (backend/cuda/cuda_event.hpp): record, wait, query and device-measured completion times.
#include "scaletrain/backend/cuda/cuda_event.hpp"

#include "scaletrain/backend/cuda/cuda_device.hpp"
#include "scaletrain/core/check_cuda.hpp"

namespace scaletrain::cuda {

CudaEvent::CudaEvent(std::string label, int device, std::shared_ptr<DeviceClock> clock)
    : Event(std::move(label)), device_(device), clock_(std::move(clock)) {
  use_device(device_);
  ST_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDefault));
}

CudaEvent::~CudaEvent() {
  // A pending record is released by the runtime once it completes.
  if (event_) (void)cudaEventDestroy(event_);
}

void CudaEvent::record_on(cudaStream_t stream) {
  std::shared_ptr<const ClockAnchor> anchor = clock_->anchor_for_record();
  std::lock_guard lk(mu_);
  use_device(device_);
  ST_CUDA_CHECK(cudaEventRecord(event_, stream));
  anchor_ = std::move(anchor);
}

void CudaEvent::wait_on(cudaStream_t stream) {
  std::lock_guard lk(mu_);
  if (!anchor_) return;
  use_device(device_);
  ST_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, cudaEventWaitDefault));
}

bool CudaEvent::query() {
  const cudaError_t rc = cudaEventQuery(event_);
  if (rc == cudaErrorNotReady) {
    (void)cudaGetLastError();  // "not ready" is an answer, not an error a later launch check should see
    return false;
  }
  ST_CUDA_CHECK(rc);
  return true;
}

void CudaEvent::block() { ST_CUDA_CHECK(cudaEventSynchronize(event_)); }

double CudaEvent::completion_time() {
  std::shared_ptr<const ClockAnchor> anchor;
  {
    std::lock_guard lk(mu_);
    anchor = anchor_;
  }
  ST_CHECK(anchor != nullptr, "event '", label(), "' was never recorded: it has no completion time");
  block();  // complete already (the caller's query said so): no host synchronization to count
  return DeviceClock::seconds_at(*anchor, event_);
}

}  // namespace scaletrain::cuda
