// CudaMemory (backend/cuda/cuda_memory.hpp): cudaMalloc/cudaFree behind the caching allocator,
// release fences from an event pool, cudaHostAlloc'd host buffers, and release functions that never
// throw (they run in tensor destructors).
#include "scaletrain/backend/cuda/cuda_memory.hpp"

#include <cstdio>

#include "scaletrain/backend/cuda/cuda_device.hpp"
#include "scaletrain/core/check_cuda.hpp"

namespace scaletrain::cuda {
namespace {

// A release function cannot throw; its failures are printed (none at process exit, when the
// runtime is already unloading).
void report(const char* what, cudaError_t rc) {
  if (rc == cudaSuccess || rc == cudaErrorCudartUnloading) return;
  std::fprintf(stderr, "[rank %d on %s] scaletrain: %s failed: %s\n", error_rank(), error_host().c_str(), what,
               cudaGetErrorString(rc));
}

RawMemory cuda_raw_memory(int device) {
  RawMemory r;
  r.allocate = [device](size_t bytes) -> void* {
    use_device(device);
    void* p = nullptr;
    const cudaError_t rc = cudaMalloc(&p, bytes);
    if (rc == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: a later launch check must not see it
      return nullptr;
    }
    ST_CUDA_CHECK(rc);
    return p;
  };
  r.free = [device](void* p) {
    report("cudaSetDevice", cudaSetDevice(device));
    report("cudaFree", cudaFree(p));
  };
  r.wait_idle = [device] {
    use_device(device);
    ST_CUDA_CHECK(cudaDeviceSynchronize());
  };
  return r;
}

size_t bytes_of(const Shape& shape, DType dtype, const std::string& name) {
  for (int64_t d : shape) ST_CHECK(d >= 0, "negative dimension in the shape ", shape_string(shape), " of '", name, "'");
  return static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
}

// Events recorded on the streams at a block's release; back to the pool when the block is reused.
struct Fence {
  std::weak_ptr<CudaMemory> owner;
  std::vector<cudaEvent_t> events;
  std::function<void(const std::vector<cudaEvent_t>&)> give_back;
  ~Fence() {
    if (owner.lock()) {
      give_back(events);
      return;
    }
    for (cudaEvent_t e : events) report("cudaEventDestroy", cudaEventDestroy(e));
  }
  bool done() const {
    for (cudaEvent_t e : events) {
      const cudaError_t rc = cudaEventQuery(e);
      if (rc == cudaErrorNotReady) {
        (void)cudaGetLastError();
        return false;
      }
      ST_CUDA_CHECK(rc);
    }
    return true;
  }
};

}  // namespace

CudaMemory::CudaMemory(int device, std::string device_label, std::vector<cudaStream_t> streams)
    : device_(device), streams_(std::move(streams)), allocator_(cuda_raw_memory(device), std::move(device_label)) {}

CudaMemory::~CudaMemory() {
  for (cudaEvent_t e : event_pool_) report("cudaEventDestroy", cudaEventDestroy(e));
}

void CudaMemory::close() {
  {
    std::lock_guard lk(mu_);
    closed_ = true;
  }
  allocator_.stop_caching();
}

cudaEvent_t CudaMemory::take_event() {
  {
    std::lock_guard lk(mu_);
    if (!event_pool_.empty()) {
      cudaEvent_t e = event_pool_.back();
      event_pool_.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  ST_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void CudaMemory::give_back(const std::vector<cudaEvent_t>& events) {
  std::lock_guard lk(mu_);
  event_pool_.insert(event_pool_.end(), events.begin(), events.end());
}

std::function<bool()> CudaMemory::release_fence() {
  use_device(device_);
  auto fence = std::make_shared<Fence>();
  fence->owner = weak_from_this();
  fence->give_back = [this](const std::vector<cudaEvent_t>& events) { give_back(events); };
  for (cudaStream_t s : streams_) {
    fence->events.push_back(take_event());
    ST_CUDA_CHECK(cudaEventRecord(fence->events.back(), s));
  }
  return [fence] { return fence->done(); };
}

Tensor CudaMemory::empty(Shape shape, DType dtype, std::string name) {
  const CachingAllocator::Block block = allocator_.allocate(bytes_of(shape, dtype, name), name);
  std::shared_ptr<CudaMemory> self = shared_from_this();
  return Tensor::adopt(block.ptr, block.bytes, std::move(shape), dtype, Device::cuda, std::move(name),
                       [self](void* p) { self->release_device(p); });
}

void CudaMemory::release_device(void* p) noexcept {
  try {
    bool closed = false;
    {
      std::lock_guard lk(mu_);
      closed = closed_;
    }
    allocator_.release(p, closed ? std::function<bool()>() : release_fence());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
}

Tensor CudaMemory::pinned(Shape shape, DType dtype, std::string name) {
  const size_t bytes = bytes_of(shape, dtype, name);
  use_device(device_);
  void* p = nullptr;
  const cudaError_t rc = cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocDefault);
  if (rc == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    ST_FAIL("out of page-locked host memory: tensor '", name, "' ", shape_string(shape), " ", dtype_name(dtype),
            " needs ", bytes, " bytes (lower data.prefetch or train.batch)");
  }
  ST_CUDA_CHECK(rc);
  std::shared_ptr<CudaMemory> self = shared_from_this();
  return Tensor::adopt(p, bytes, std::move(shape), dtype, Device::cpu, std::move(name),
                       [self](void* q) { self->release_pinned(q); });
}

// Copies queued on any stream may still read or write the buffer: they finish first.
void CudaMemory::release_pinned(void* p) noexcept {
  bool closed = false;
  {
    std::lock_guard lk(mu_);
    closed = closed_;
  }
  report("cudaSetDevice", cudaSetDevice(device_));
  if (!closed)
    for (cudaStream_t s : streams_) report("cudaStreamSynchronize", cudaStreamSynchronize(s));
  report("cudaFreeHost", cudaFreeHost(p));
}

}  // namespace scaletrain::cuda
