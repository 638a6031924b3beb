// DeviceClock (backend/cuda/device_clock.hpp): anchors of the device's event clock to the host's
// steady clock, each the best of three record-and-synchronize round trips.
#include "scaletrain/backend/cuda/device_clock.hpp"

#include "scaletrain/backend/cuda/cuda_device.hpp"
#include "scaletrain/core/check_cuda.hpp"
#include "scaletrain/core/timer.hpp"

namespace scaletrain::cuda {

ClockAnchor::~ClockAnchor() {
  if (event) (void)cudaEventDestroy(event);  // a destructor: nothing to report to
}

DeviceClock::DeviceClock(int device, double refresh_seconds) : device_(device), refresh_seconds_(refresh_seconds) {
  use_device(device_);
  ST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  current_ = make_anchor();
}

DeviceClock::~DeviceClock() {
  if (stream_) (void)cudaStreamDestroy(stream_);
}

// The event's device timestamp lies between the host times before the record and after the
// synchronize; the midpoint of the narrowest of three such windows is the anchor's host time.
std::shared_ptr<const ClockAnchor> DeviceClock::make_anchor() {
  use_device(device_);
  std::shared_ptr<ClockAnchor> best;
  double best_window = 1e300;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto a = std::make_shared<ClockAnchor>();
    ST_CUDA_CHECK(cudaEventCreateWithFlags(&a->event, cudaEventDefault));
    const double before = now_seconds();
    ST_CUDA_CHECK(cudaEventRecord(a->event, stream_));
    ST_CUDA_CHECK(cudaEventSynchronize(a->event));
    const double after = now_seconds();
    if (after - before < best_window) {
      best_window = after - before;
      a->host_seconds = 0.5 * (before + after);
      best = std::move(a);
    }
  }
  return best;
}

std::shared_ptr<const ClockAnchor> DeviceClock::anchor_for_record() {
  std::lock_guard lk(mu_);
  if (now_seconds() - current_->host_seconds > refresh_seconds_) current_ = make_anchor();
  return current_;
}

double DeviceClock::seconds_at(const ClockAnchor& anchor, cudaEvent_t event) {
  float ms = 0;
  ST_CUDA_CHECK(cudaEventElapsedTime(&ms, anchor.event, event));
  return anchor.host_seconds + 1e-3 * static_cast<double>(ms);
}

}  // namespace scaletrain::cuda
