// CudaMemory: one CUDA device's memory (cudaMalloc behind a CachingAllocator) and page-locked host
// buffers (cudaHostAlloc); a released block is reused only once the backend's streams have finished
// the work queued before its release. Shared by the backend and its tensors' release functions.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "scaletrain/backend/caching_allocator.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::cuda {

// Tensors may outlive the backend: after close() their memory is freed at once.
class CudaMemory : public std::enable_shared_from_this<CudaMemory> {
 public:
  // `streams`: every stream that may use device memory (compute, copy, comm).
  CudaMemory(int device, std::string device_label, std::vector<cudaStream_t> streams);
  ~CudaMemory();
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;

  Tensor empty(Shape shape, DType dtype, std::string name);
  Tensor pinned(Shape shape, DType dtype, std::string name);
  AllocatorStats stats() const { return allocator_.stats(); }
  // The backend is going away (its streams are synchronized and about to be destroyed): frees the
  // cache; tensors released later are freed at once.
  void close();

 private:
  // Events (from a pool) recorded now on every stream; the predicate is true once all have completed.
  std::function<bool()> release_fence();
  cudaEvent_t take_event();
  void give_back(const std::vector<cudaEvent_t>& events);
  void release_device(void* p) noexcept;
  void release_pinned(void* p) noexcept;

  int device_;
  std::vector<cudaStream_t> streams_;
  CachingAllocator allocator_;
  std::mutex mu_;
  bool closed_ = false;
  std::vector<cudaEvent_t> event_pool_;  // completed fence events, for reuse
};

}  // namespace scaletrain::cuda
