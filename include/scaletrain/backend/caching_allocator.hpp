// CachingAllocator: a device allocator that keeps freed blocks and hands them out again (best fit),
// so that a training loop allocates nothing from the device in its steady state. Pure code: the raw
// allocation and free are injected (cudaMalloc/cudaFree on CUDA, a fake in the tests).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace scaletrain {

// The device's own allocation calls.
struct RawMemory {
  // A block of exactly `bytes`, or null when the device is out of memory (other failures throw).
  std::function<void*(size_t bytes)> allocate;
  std::function<void(void* p)> free;  // must not throw (it runs in destructors)
  // Optional: waits until no queued work uses any memory (the device's synchronize). Called before
  // cached blocks that are not yet reusable are freed to make room; without it they are kept.
  std::function<void()> wait_idle;
};

struct AllocatorStats {
  int64_t bytes_in_use = 0;     // blocks handed out (rounded sizes)
  int64_t bytes_cached = 0;     // freed blocks kept for reuse
  int64_t raw_allocations = 0;  // calls of RawMemory::allocate that succeeded, since construction
  int64_t raw_frees = 0;
  int64_t reuses = 0;           // allocations served from the cache
};

class CachingAllocator {
 public:
  // `device` names the device in errors ("cuda device 0 (NVIDIA H100 80GB HBM3)"); sizes are rounded
  // up to a multiple of `round_bytes` (at least one unit, so every block has its own address).
  CachingAllocator(RawMemory raw, std::string device, size_t round_bytes = 512);
  ~CachingAllocator();  // frees the cached blocks; blocks still in use are the caller's
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  struct Block {
    void* ptr = nullptr;
    size_t bytes = 0;  // the rounded size: what the caller may use
  };
  // A block of at least `bytes` for the tensor `name`: a cached block that is reusable (the smallest
  // that fits, up to twice the rounded size), else a raw allocation. When that fails, every cached
  // block is freed and the allocation retried once; if it still fails, an Error names the tensor,
  // the bytes it needs, the bytes in use and cached, and what to lower.
  Block allocate(size_t bytes, const std::string& name);
  // Gives a block back. It is handed out again only once `reusable()` returns true (null: at once):
  // the CUDA backend passes a query of events recorded on its streams at release, so a block is not
  // reused while queued work may still read or write it.
  void release(void* ptr, std::function<bool()> reusable = {});
  // Frees the cached blocks (waiting first, with RawMemory::wait_idle, for those not yet reusable).
  void free_cached();
  // From now on release() frees blocks at once (the device is going away and has been synchronized).
  void stop_caching();

  AllocatorStats stats() const;
  size_t round_up(size_t bytes) const;

 private:
  struct Cached {
    void* ptr;
    std::function<bool()> reusable;  // null once known to be reusable
  };
  using FreeList = std::multimap<size_t, Cached>;  // by size
  bool ready(Cached& c);
  void* take_cached(size_t rounded);
  void free_cached_locked();
  void raw_free(void* p);
  [[noreturn]] void out_of_memory(size_t bytes, size_t rounded, const std::string& name, int64_t cached_before) const;

  RawMemory raw_;
  std::string device_;
  size_t round_;
  bool caching_ = true;
  mutable std::mutex mu_;
  FreeList free_;
  std::unordered_map<void*, size_t> in_use_;  // handed-out block -> rounded size
  AllocatorStats stats_;
};

}  // namespace scaletrain
