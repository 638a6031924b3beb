// CudaStream: a non-blocking cudaStream_t behind the Stream interface. Host work runs through
// cudaLaunchHostFunc on a thread of the runtime, in order with the device work; its exceptions and
// its function objects are dealt with by the next call on the stream, on the calling thread.
#pragma once
#include <cuda_runtime.h>

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "scaletrain/backend/stream.hpp"

namespace scaletrain::cuda {

class CudaStream final : public Stream {
 public:
  CudaStream(std::string name, int device);
  ~CudaStream() override;  // waits for the stream's work
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  bool runs_inline() const override { return false; }
  void* cuda_handle() const override { return stream_; }
  cudaStream_t handle() const { return stream_; }
  void enqueue(std::function<void()> work) override;
  void record(Event& e) override;
  void wait(Event& e) override;
  // Blocks the host until the stream is done, uncounted (Stream::synchronize counts; the backend's
  // synchronize counts once for all its streams).
  void drain() override;

 private:
  struct HostWork {
    CudaStream* stream;
    std::function<void()> work;
  };
  static void CUDART_CB run_host_work(void* data);
  void finished(HostWork* w, std::exception_ptr error);
  // Destroys the host work that has run and rethrows the first error it raised.
  void collect();

  int device_;
  cudaStream_t stream_ = nullptr;
  std::mutex mu_;
  // Host work that ran, destroyed by the next host call: its captures may release device memory,
  // which calls CUDA, and a host function must not.
  std::vector<std::unique_ptr<HostWork>> done_;
  std::exception_ptr error_;
};

}  // namespace scaletrain::cuda
