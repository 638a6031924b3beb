// CudaStream (backend/cuda/cuda_stream.hpp): host work through cudaLaunchHostFunc with errors
// reported by a later call, events recorded and waited on, synchronize.
#include "scaletrain/backend/cuda/cuda_stream.hpp"

#include "scaletrain/backend/cuda/cuda_device.hpp"
#include "scaletrain/backend/cuda/cuda_event.hpp"
#include "scaletrain/core/check_cuda.hpp"

namespace scaletrain::cuda {
namespace {

CudaEvent& as_cuda(Event& e, const std::string& stream) {
  auto* ce = dynamic_cast<CudaEvent*>(&e);
  ST_CHECK(ce != nullptr, "cuda stream '", stream, "' cannot use event '", e.label(), "' of another backend");
  return *ce;
}

}  // namespace

CudaStream::CudaStream(std::string name, int device) : Stream(std::move(name)), device_(device) {
  use_device(device_);
  ST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  // A destructor reports nothing: the errors went to the calls that saw them. The host work's
  // captures go before the stream does (releasing memory may record an event on it).
  (void)cudaStreamSynchronize(stream_);
  std::vector<std::unique_ptr<HostWork>> done;
  {
    std::lock_guard lk(mu_);
    done.swap(done_);
  }
  done.clear();
  (void)cudaStreamDestroy(stream_);
}

void CUDART_CB CudaStream::run_host_work(void* data) {
  auto* w = static_cast<HostWork*>(data);
  std::exception_ptr error;
  try {
    w->work();
  } catch (...) {
    error = std::current_exception();
  }
  w->stream->finished(w, error);
}

void CudaStream::finished(HostWork* w, std::exception_ptr error) {
  std::lock_guard lk(mu_);
  done_.emplace_back(w);
  if (error && !error_) error_ = error;
}

void CudaStream::collect() {
  std::vector<std::unique_ptr<HostWork>> done;
  std::exception_ptr error;
  {
    std::lock_guard lk(mu_);
    done.swap(done_);
    error.swap(error_);
  }
  done.clear();  // outside the lock: the captures' destructors may release memory
  if (error) std::rethrow_exception(error);
}

void CudaStream::enqueue(std::function<void()> work) {
  collect();
  use_device(device_);
  auto w = std::make_unique<HostWork>(HostWork{this, std::move(work)});
  ST_CUDA_CHECK(cudaLaunchHostFunc(stream_, &CudaStream::run_host_work, w.get()));
  (void)w.release();  // owned by the queue until run_host_work hands it to done_
}

void CudaStream::record(Event& e) {
  collect();
  as_cuda(e, name()).record_on(stream_);
}

void CudaStream::wait(Event& e) {
  collect();
  as_cuda(e, name()).wait_on(stream_);
}

void CudaStream::drain() {
  use_device(device_);
  ST_CUDA_CHECK(cudaStreamSynchronize(stream_));
  collect();
}

}  // namespace scaletrain::cuda
